//! Which file a value of a merged spec was written in. serde-saphyr's `Location` carries
//! the id of the source it was read from (0: the document parsed); the values a spec
//! takes from its directory's defaults file are given [`DEFAULTS_SOURCE`], so an error
//! about one of them names the defaults file, its line and its column, wherever in
//! drover it is found.

use std::path::Path;

use serde_saphyr::Location;

use crate::load::error::{Position, SpecError};

/// The source id of locations in the defaults file.
const DEFAULTS_SOURCE: u32 = 1;

/// `location`, marked as lying in the defaults file. serde-saphyr builds locations only
/// while parsing, so the mark is made through `Location`'s own `Deserialize` (its fields
/// `line`, `column`, `source_id`); should that ever fail, the location is kept as it was
/// (and a unit test of this module fails).
pub(crate) fn in_defaults(location: Location) -> Location {
    let fields = serde_json::json!({
        "line": location.line(),
        "column": location.column(),
        "source_id": DEFAULTS_SOURCE,
    });
    serde_json::from_value(fields).unwrap_or(location)
}

/// The files a spec's values come from: its own, and the defaults file of its directory.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Files<'a> {
    pub spec: &'a Path,
    pub defaults: Option<&'a Path>,
}

impl Files<'_> {
    /// Where `location` lies: in the defaults file when it was marked so, else in the spec.
    pub(crate) fn at(&self, location: Option<Location>) -> Position {
        match (self.defaults, location) {
            (Some(defaults), Some(location)) if location.source_id() == DEFAULTS_SOURCE => {
                Position::at(defaults, Some(location))
            }
            _ => Position::at(self.spec, location),
        }
    }

    /// A [`SpecError::Invalid`] at `location`.
    pub(crate) fn invalid(&self, location: Option<Location>, message: String) -> SpecError {
        SpecError::Invalid {
            position: self.at(location),
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_marked_location_names_the_defaults_file_at_its_line_and_column() {
        #[derive(serde::Deserialize)]
        struct Doc {
            _a: u32,
            b: serde_saphyr::Spanned<u32>,
        }
        let doc: Doc = serde_saphyr::from_str("_a: 1\nb:   7\n").unwrap();
        let files = Files {
            spec: Path::new("t/spec.yaml"),
            defaults: Some(Path::new("t/drover.yaml")),
        };
        assert_eq!(
            files.at(Some(doc.b.referenced)).to_string(),
            "t/spec.yaml:2:6"
        );
        let marked = in_defaults(doc.b.referenced);
        assert_eq!(marked.source_id(), DEFAULTS_SOURCE);
        assert_eq!(files.at(Some(marked)).to_string(), "t/drover.yaml:2:6");
        assert_eq!(files.at(None).to_string(), "t/spec.yaml:1:1");
        let alone = Files {
            defaults: None,
            ..files
        };
        assert_eq!(alone.at(Some(marked)).to_string(), "t/spec.yaml:2:6");
    }
}
