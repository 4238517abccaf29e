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

impl LockedApp {
    pub fn from_value(value: Value) -> Result<Self, String> {
        let app: LockedApp = serde_json::from_value(value).map_err(|e| format!("the lock: {e}"))?;
        // Spin refuses a lock that needs a feature it lacks; the worker knows none of them.
        if let Some(feature) = app.must_understand.first() {
            return Err(format!(
                "the lock needs {feature:?}, which this worker does not understand"
            ));
        }
        Ok(app)
    }

    /// (route, component, executor) of every http trigger, refusing what the worker cannot run.
    pub fn http_routes(&self) -> Result<Vec<(String, String, Executor)>, String> {
        let mut routes = Vec::new();
        for trigger in self.triggers.iter().filter(|t| t.trigger_type == "http") {
            let config = &trigger.trigger_config;
            let executor = Executor::from_config(config.executor.as_ref())
                .map_err(|e| format!("trigger {}: {e}", trigger.id))?;
            let component = config
                .component
                .clone()
                .ok_or_else(|| format!("trigger {} names no component", trigger.id))?;
            let route = config
                .route
                .clone()
                .ok_or_else(|| format!("trigger {} has no route", trigger.id))?;
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
    fn from_config(executor: Option<&Value>) -> Result<Self, String> {
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
            Some(other) => Err(format!(
                "the {other:?} executor is not supported by this worker"
            )),
        }
    }
}

impl LockedComponent {
    pub fn allowed_outbound_hosts(&self) -> Result<Vec<String>, String> {
        match self.metadata.get("allowed_outbound_hosts") {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(value) => serde_json::from_value(value.clone()).map_err(|_| {
                format!(
                    "component {}: allowed_outbound_hosts is not a list of strings",
                    self.id
                )
            }),
        }
    }
}
