//! What `load` is told of variables and config the lock gets wrong: the text of each is
//! what the control plane shows, kept word for word.

/// A template of the lock that cannot be read, or whose variable has no value.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("unterminated {{{{ in the template")]
    Unterminated,
    #[error("the template names {0:?}, which the application does not declare")]
    Undeclared(String),
    /// Rendered: one of its variables has no value.
    #[error("{0}")]
    Unresolved(String),
}

/// Variables or config of the lock refused at `load`.
#[derive(Debug, thiserror::Error)]
pub enum VariablesError {
    #[error("the application's variable {name:?} {problem}")]
    BadName { name: String, problem: &'static str },
    #[error("a value was given for {0:?}, which the lock does not declare")]
    NotDeclared(String),
    #[error("component {component}: config key {key:?} {problem}")]
    BadKey {
        component: String,
        key: String,
        problem: &'static str,
    },
    #[error("component {component}: config {key} is not a string")]
    NotText { component: String, key: String },
    #[error("component {component}: config {key}: {error}")]
    Template {
        component: String,
        key: String,
        error: TemplateError,
    },
}
