//! PLACEHOLDER — to be implemented.
use crate::record::RunReport;
pub fn summary_json(_report: &RunReport) -> String {
    todo!()
}
pub fn summary_md(_report: &RunReport) -> String {
    todo!()
}
