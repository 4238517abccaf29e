//! Spin's variables (`fermyon:spin/variables@2.0.0`) answered as host/src/variables.ts and
//! Spin's crates/expressions answer them: a component reads one of its `config` keys; the
//! key's template ("{{ name }}", or text around such parts) names application variables the
//! lock declares; each comes from the values the control plane sent with `load`, then from
//! its default. Values live only in this process's memory and are never logged.

mod errors;

pub use errors::{TemplateError, VariablesError};

use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The interface's error variant, as the guest sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VariableError {
    InvalidName(String),
    Undefined(String),
    Provider(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Variable(String),
}

/// The resolved values of one application, shared by its components.
#[derive(Debug, Default)]
pub struct AppVariables {
    values: HashMap<String, String>,
}

/// What one component can read.
#[derive(Debug, Clone)]
pub struct ComponentVariables {
    component: String,
    templates: Arc<HashMap<String, Vec<Part>>>,
    app: Arc<AppVariables>,
}

/// Spin's rule for a variable name and a config key (crates/expressions, Key::validate).
pub fn name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("must not be empty");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Some("may contain only lower-case letters, numbers, and underscores");
    }
    if !name.as_bytes()[0].is_ascii_lowercase() {
        return Some("must start with a lowercase ASCII letter");
    }
    if name.ends_with('_') {
        return Some("must end with a lowercase ASCII letter or digit");
    }
    if name.contains("__") {
        return Some("must not contain multiple consecutive underscores");
    }
    None
}

impl AppVariables {
    /// `declared` is the lock's `variables` object; `given` the values from `load`. A value
    /// given for a name the lock does not declare is refused: it is a control-plane bug.
    pub fn new(
        declared: &serde_json::Map<String, Value>,
        given: &HashMap<String, String>,
    ) -> Result<Self, VariablesError> {
        for name in declared.keys() {
            if let Some(problem) = name_problem(name) {
                return Err(VariablesError::BadName {
                    name: name.clone(),
                    problem,
                });
            }
        }
        if let Some(name) = given.keys().find(|n| !declared.contains_key(*n)) {
            return Err(VariablesError::NotDeclared(name.clone()));
        }
        let mut values = HashMap::new();
        for (name, spec) in declared {
            let fallback = spec.get("default").and_then(Value::as_str);
            if let Some(value) = given.get(name).map(String::as_str).or(fallback) {
                values.insert(name.clone(), value.to_string());
            }
        }
        Ok(AppVariables { values })
    }

    /// Expands a template of the lock (a config value, an allowed host), as Spin does before
    /// it uses one; `declared` says which names a template may use.
    pub fn expand(
        &self,
        template: &str,
        declared: &dyn Fn(&str) -> bool,
    ) -> Result<String, TemplateError> {
        let parts = parse_template(template, declared)?;
        render(&parts, self).map_err(|e| match e {
            VariableError::Provider(m)
            | VariableError::Undefined(m)
            | VariableError::InvalidName(m) => TemplateError::Unresolved(m),
        })
    }
}

impl ComponentVariables {
    /// Checks every config template of a component now, so a lock that names an undeclared
    /// variable fails at load, as Spin refuses to start it.
    pub fn new(
        component: &str,
        config: &serde_json::Map<String, Value>,
        declared: &dyn Fn(&str) -> bool,
        app: Arc<AppVariables>,
    ) -> Result<Self, VariablesError> {
        let mut templates = HashMap::new();
        for (key, template) in config {
            if let Some(problem) = name_problem(key) {
                return Err(VariablesError::BadKey {
                    component: component.to_string(),
                    key: key.clone(),
                    problem,
                });
            }
            let template = template.as_str().ok_or_else(|| VariablesError::NotText {
                component: component.to_string(),
                key: key.clone(),
            })?;
            let parts =
                parse_template(template, declared).map_err(|error| VariablesError::Template {
                    component: component.to_string(),
                    key: key.clone(),
                    error,
                })?;
            templates.insert(key.clone(), parts);
        }
        Ok(ComponentVariables {
            component: component.to_string(),
            templates: Arc::new(templates),
            app,
        })
    }

    pub fn get(&self, name: &str) -> Result<String, VariableError> {
        if let Some(problem) = name_problem(name) {
            return Err(VariableError::InvalidName(format!("{name:?}: {problem}")));
        }
        let Some(parts) = self.templates.get(name) else {
            return Err(VariableError::Undefined(format!(
                "no variable for {:?}.{name:?}",
                self.component
            )));
        };
        render(parts, &self.app)
    }
}

fn render(parts: &[Part], app: &AppVariables) -> Result<String, VariableError> {
    let mut text = String::new();
    for part in parts {
        match part {
            Part::Literal(literal) => text.push_str(literal),
            Part::Variable(name) => match app.values.get(name) {
                Some(value) => text.push_str(value),
                None => {
                    return Err(VariableError::Provider(format!(
                        "no provider resolved required variable {name:?}"
                    )));
                }
            },
        }
    }
    Ok(text)
}

fn parse_template(
    template: &str,
    declared: &dyn Fn(&str) -> bool,
) -> Result<Vec<Part>, TemplateError> {
    let mut parts = Vec::new();
    let mut rest = template;
    while !rest.is_empty() {
        let Some(open) = rest.find("{{") else {
            parts.push(Part::Literal(rest.to_string()));
            break;
        };
        if open > 0 {
            parts.push(Part::Literal(rest[..open].to_string()));
        }
        let Some(close) = rest[open..].find("}}").map(|c| c + open) else {
            return Err(TemplateError::Unterminated);
        };
        let name = rest[open + 2..close].trim();
        if !declared(name) {
            return Err(TemplateError::Undeclared(name.to_string()));
        }
        parts.push(Part::Variable(name.to_string()));
        rest = &rest[close + 2..];
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn app(declared: Value, given: &[(&str, &str)]) -> Result<AppVariables, VariablesError> {
        let given = given
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        AppVariables::new(declared.as_object().unwrap(), &given)
    }

    #[test]
    fn templates_resolve_given_value_then_default() {
        let declared = json!({"greeting": {"default": "hello"}, "token": {"secret": true}, "unset": {"required": true}});
        let names = |n: &str| ["greeting", "token", "unset"].contains(&n);
        let app = Arc::new(app(declared, &[("token", "s3cret")]).unwrap());
        let config = json!({"message": "{{ greeting }}, {{token}}!", "missing": "{{ unset }}"});
        let vars = ComponentVariables::new("c", config.as_object().unwrap(), &names, app).unwrap();
        assert_eq!(vars.get("message").unwrap(), "hello, s3cret!");
        assert!(matches!(
            vars.get("missing"),
            Err(VariableError::Provider(_))
        ));
        assert!(matches!(vars.get("nope"), Err(VariableError::Undefined(_))));
        assert!(matches!(
            vars.get("Bad-Name"),
            Err(VariableError::InvalidName(_))
        ));
    }

    #[test]
    fn inconsistent_locks_are_refused() {
        let refusal = |declared, given| app(declared, given).unwrap_err().to_string();
        assert_eq!(
            refusal(json!({"Bad": {}}), &[]),
            "the application's variable \"Bad\" may contain only lower-case letters, numbers, and underscores"
        );
        assert_eq!(
            refusal(json!({"a": {}}), &[("b", "x")]),
            "a value was given for \"b\", which the lock does not declare"
        );
        let names = |n: &str| n == "a";
        let a = Arc::new(app(json!({"a": {}}), &[]).unwrap());
        for (config, refused) in [
            (
                json!({"k": "{{ b }}"}),
                "component c: config k: the template names \"b\", which the application does not declare",
            ),
            (
                json!({"k": "{{ a"}),
                "component c: config k: unterminated {{ in the template",
            ),
            (
                json!({"K": "x"}),
                "component c: config key \"K\" may contain only lower-case letters, numbers, and underscores",
            ),
            (json!({"k": 1}), "component c: config k is not a string"),
        ] {
            let made = ComponentVariables::new("c", config.as_object().unwrap(), &names, a.clone());
            assert_eq!(made.unwrap_err().to_string(), refused);
        }
        assert_eq!(
            a.expand("{{ a }}", &names).unwrap_err().to_string(),
            "no provider resolved required variable \"a\""
        );
    }
}
