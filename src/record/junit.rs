//! PLACEHOLDER — to be implemented.
use crate::record::RunReport;
/// The JUnit XML for a run.
pub fn junit_xml(_report: &RunReport) -> String {
    todo!()
}
