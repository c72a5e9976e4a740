//! One task of a run as an orchestrator's work item (`--only NAME…`, `--task-index N`):
//! every pod, activity or matrix cell loads the same specs and runs exactly the task it
//! is given, so one slow or failed task is retried alone, not with a whole shard.

use super::shard::COMPLETION_INDEX_VAR;

/// Which tasks of a run a work item takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum WorkItem {
    /// The tasks of these names.
    Named(Vec<String>),
    /// The task at this 0-based place in the run's tasks sorted by name.
    Index(usize),
}

/// A work item that names no task of the run.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WorkItemError {
    #[error("--task-index {text:?}: expected a number from 0, or auto")]
    BadIndex { text: String },
    #[error(
        "--task-index auto: {COMPLETION_INDEX_VAR} is not set to a number (it is set in the pods of a Kubernetes Indexed Job); give the index instead"
    )]
    NoCompletionIndex,
    #[error(
        "--task-index {index}: the specs hold {count} task{}, so the index runs from 0 to {}",
        if *count == 1 { "" } else { "s" },
        count.saturating_sub(1)
    )]
    OutOfRange { index: usize, count: usize },
    #[error("--only {}: no task has that name; the tasks are {}", names.join(","), known.join(", "))]
    Unknown {
        names: Vec<String>,
        known: Vec<String>,
    },
}

impl WorkItem {
    /// `--task-index`'s value: a number, or `auto` for the pod's completion index.
    pub(crate) fn index(
        text: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<WorkItem, WorkItemError> {
        let number = if text.trim() == "auto" {
            env(COMPLETION_INDEX_VAR)
                .and_then(|value| value.trim().parse().ok())
                .ok_or(WorkItemError::NoCompletionIndex)?
        } else {
            text.trim().parse().map_err(|_| WorkItemError::BadIndex {
                text: text.to_string(),
            })?
        };
        Ok(WorkItem::Index(number))
    }

    /// The items this work item takes, in their original order; `name` gives each
    /// item's task name (unique within a run).
    pub(crate) fn select<T>(
        &self,
        items: Vec<T>,
        name: impl Fn(&T) -> &str,
    ) -> Result<Vec<T>, WorkItemError> {
        let mut names: Vec<String> = items.iter().map(|item| name(item).to_string()).collect();
        names.sort();
        let chosen: Vec<String> = match self {
            WorkItem::Index(index) => match names.get(*index) {
                Some(name) => vec![name.clone()],
                None => {
                    return Err(WorkItemError::OutOfRange {
                        index: *index,
                        count: names.len(),
                    });
                }
            },
            WorkItem::Named(wanted) => {
                let unknown: Vec<String> = wanted
                    .iter()
                    .filter(|wanted| !names.contains(wanted))
                    .cloned()
                    .collect();
                if !unknown.is_empty() {
                    return Err(WorkItemError::Unknown {
                        names: unknown,
                        known: names,
                    });
                }
                wanted.clone()
            }
        };
        Ok(items
            .into_iter()
            .filter(|item| chosen.iter().any(|chosen| chosen == name(item)))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks() -> Vec<&'static str> {
        vec!["svc-c", "svc-a", "svc-b"]
    }

    #[test]
    fn an_index_takes_the_task_at_its_place_by_name() {
        let pick = |index| WorkItem::Index(index).select(tasks(), |t| t);
        assert_eq!(pick(0), Ok(vec!["svc-a"]));
        assert_eq!(pick(1), Ok(vec!["svc-b"]));
        assert_eq!(pick(2), Ok(vec!["svc-c"]));
        let error = pick(3).unwrap_err();
        assert_eq!(error, WorkItemError::OutOfRange { index: 3, count: 3 });
        assert!(error.to_string().contains("from 0 to 2"), "{error}");
    }

    #[test]
    fn names_take_their_tasks_in_run_order_and_an_unknown_name_is_an_error() {
        let named = WorkItem::Named(vec!["svc-a".into(), "svc-c".into()]);
        assert_eq!(named.select(tasks(), |t| t), Ok(vec!["svc-c", "svc-a"]));
        let error = WorkItem::Named(vec!["svc-z".into()])
            .select(tasks(), |t| t)
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("--only svc-z: no task has that name; the tasks are svc-a, svc-b, svc-c"),
            "{error}"
        );
    }

    #[test]
    fn auto_reads_the_pods_completion_index() {
        let env = |name: &str| (name == COMPLETION_INDEX_VAR).then(|| "2".to_string());
        assert_eq!(WorkItem::index("auto", &env), Ok(WorkItem::Index(2)));
        assert_eq!(WorkItem::index(" 1 ", &|_| None), Ok(WorkItem::Index(1)));
        assert_eq!(
            WorkItem::index("auto", &|_| None),
            Err(WorkItemError::NoCompletionIndex)
        );
        assert!(matches!(
            WorkItem::index("-1", &|_| None),
            Err(WorkItemError::BadIndex { .. })
        ));
    }
}
