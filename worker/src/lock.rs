//! The parts of a Spin locked application (crates/locked-app's JSON, as spin/src/
//! format.ts types it) that the worker reads. Unknown fields are ignored, as Spin does for
//! fields it does not understand, except what `must_understand` lists.

use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Deserialize)]
pub struct LockedApp {
    #[serde(default)]
    pub must_understand: Vec<String>,
    #[serde(default)]
    pub variables: Map<String, Value>,
    #[serde(default)]
    pub triggers: Vec<Trigger>,
    #[serde(default)]
    pub components: Vec<LockedComponent>,
}

#[derive(Debug, Deserialize)]
pub struct Trigger {
    #[serde(default)]
    pub id: String,
    pub trigger_type: String,
    #[serde(default)]
    pub trigger_config: TriggerConfig,
}

#[derive(Debug, Default, Deserialize)]
pub struct TriggerConfig {
    pub component: Option<String>,
    pub route: Option<String>,
    pub executor: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct LockedComponent {
    pub id: String,
    #[serde(default)]
    pub metadata: Map<String, Value>,
    pub source: Source,
    #[serde(default)]
    pub files: Vec<Value>,
    #[serde(default)]
    pub config: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
pub struct Source {
    pub digest: Option<String>,
}

/// A lock the worker cannot run, refused at `load`.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("the lock: {0}")]
    Parse(serde_json::Error),
    #[error("the lock needs {0:?}, which this worker does not understand")]
    MustUnderstand(String),
    #[error("trigger {trigger}: the {executor:?} executor is not supported by this worker")]
    Executor { trigger: String, executor: String },
    #[error("trigger {0} names no component")]
    NoComponent(String),
    #[error("trigger {0} has no route")]
    NoRoute(String),
    #[error("component {0}: allowed_outbound_hosts is not a list of strings")]
    AllowedHosts(String),
}

impl LockedApp {
    pub fn from_value(value: Value) -> Result<Self, LockError> {
        let app: LockedApp = serde_json::from_value(value).map_err(LockError::Parse)?;
        // Spin refuses a lock that needs a feature it lacks; the worker knows none of them.
        if let Some(feature) = app.must_understand.first() {
            return Err(LockError::MustUnderstand(feature.clone()));
        }
        Ok(app)
    }

    /// (route, component, executor) of every http trigger, refusing what the worker cannot run.
    pub fn http_routes(&self) -> Result<Vec<(String, String, Executor)>, LockError> {
        let mut routes = Vec::new();
        for trigger in self.triggers.iter().filter(|t| t.trigger_type == "http") {
            let config = &trigger.trigger_config;
            let executor = Executor::from_config(&trigger.id, config.executor.as_ref())?;
            let component = config
                .component
                .clone()
                .ok_or_else(|| LockError::NoComponent(trigger.id.clone()))?;
            let route = config
                .route
                .clone()
                .ok_or_else(|| LockError::NoRoute(trigger.id.clone()))?;
            routes.push((route, component, executor));
        }
        Ok(routes)
    }
}

/// How a component answers HTTP: the wasi:http handler (Spin's default), or WAGI (a wasip1
/// command given the request as CGI: environment, arguments, stdin; answering on stdout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Executor {
    Spin,
    Wagi { entrypoint: String, argv: String },
}

impl Executor {
    fn from_config(trigger: &str, executor: Option<&Value>) -> Result<Self, LockError> {
        let Some(executor) = executor else {
            return Ok(Executor::Spin);
        };
        let text = |key: &str, fallback: &str| {
            executor
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or(fallback)
                .to_string()
        };
        match executor.get("type").and_then(Value::as_str) {
            Some("spin") | None => Ok(Executor::Spin),
            // Spin's defaults for both (crates/trigger-http, WagiTriggerConfig).
            Some("wagi") => Ok(Executor::Wagi {
                entrypoint: text("entrypoint", "_start"),
                argv: text("argv", "${SCRIPT_NAME} ${ARGS}"),
            }),
            Some(other) => Err(LockError::Executor {
                trigger: trigger.to_string(),
                executor: other.to_string(),
            }),
        }
    }
}

impl LockedComponent {
    pub fn allowed_outbound_hosts(&self) -> Result<Vec<String>, LockError> {
        match self.metadata.get("allowed_outbound_hosts") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(value) => serde_json::from_value(value.clone())
                .map_err(|_| LockError::AllowedHosts(self.id.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refusal(lock: Value) -> String {
        let app = match LockedApp::from_value(lock) {
            Ok(app) => app,
            Err(e) => return e.to_string(),
        };
        let routes = app.http_routes().map(|_| ()).map_err(|e| e.to_string());
        let hosts = app.components.iter().try_for_each(|c| {
            c.allowed_outbound_hosts()
                .map(|_| ())
                .map_err(|e| e.to_string())
        });
        routes.and(hosts).expect_err("refused")
    }

    #[test]
    fn refusals_name_what_is_refused() {
        let trigger = |config: Value| json!({"triggers": [{"id": "t", "trigger_type": "http", "trigger_config": config}]});
        assert_eq!(
            refusal(json!({"must_understand": ["files"]})),
            "the lock needs \"files\", which this worker does not understand"
        );
        assert!(refusal(json!({"triggers": 1})).starts_with("the lock: "));
        assert_eq!(
            refusal(trigger(
                json!({"component": "c", "route": "/", "executor": {"type": "wasm"}})
            )),
            "trigger t: the \"wasm\" executor is not supported by this worker"
        );
        assert_eq!(
            refusal(trigger(json!({"route": "/"}))),
            "trigger t names no component"
        );
        assert_eq!(
            refusal(trigger(json!({"component": "c"}))),
            "trigger t has no route"
        );
        assert_eq!(
            refusal(
                json!({"components": [{"id": "c", "source": {}, "metadata": {"allowed_outbound_hosts": [1]}}]})
            ),
            "component c: allowed_outbound_hosts is not a list of strings"
        );
    }
}
