// The worker's control protocol (worker/README.md, "Protocol") as JSON Schema: its one
// definition. The control plane derives its types from it (protocol.ts, at type level) and
// checks every reply against it; the worker's tests (worker/tests/protocol.rs) read this file,
// between `= ` and ` as const`, as JSON, and check every command it accepts and every line it
// writes against it. So it stays JSON: a TypeScript module only because a JSON import has no
// literal types to derive from. Objects are closed (additionalProperties: false) so a field added
// on one side fails the other's test rather than going unnoticed.
// prettier-ignore
export const workerProtocol = {
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "title": "The worker's control protocol: one JSON object per line",
  "$defs": {
    "Id": { "type": "integer", "minimum": 1 },
    "AppId": { "type": "string", "minLength": 1 },
    "Count": { "type": "integer", "minimum": 0 },
    "Digests": { "type": "array", "items": { "type": "string" } },
    "Limits": {
      "description": "Per application; the worker's defaults for those absent; unknown keys are refused",
      "type": "object",
      "properties": {
        "memoryBytes": { "$ref": "#/$defs/Count" },
        "requestTimeoutMs": { "$ref": "#/$defs/Count" },
        "maxRequestBodyBytes": { "$ref": "#/$defs/Count" },
        "maxResponseBodyBytes": { "$ref": "#/$defs/Count" },
        "maxConcurrentRequests": { "$ref": "#/$defs/Count" },
        "maxQueuedRequests": { "$ref": "#/$defs/Count" }
      },
      "additionalProperties": false
    },
    "LoadCommand": {
      "type": "object",
      "properties": {
        "id": { "$ref": "#/$defs/Id" },
        "op": { "const": "load" },
        "app": { "$ref": "#/$defs/AppId" },
        "lock": { "description": "The locked app (Spin's lock file)", "type": "object" },
        "components": { "description": "Component id to its absolute .wasm path", "type": "object", "additionalProperties": { "type": "string" } },
        "variables": { "description": "Name to value", "type": "object", "additionalProperties": { "type": "string" } },
        "limits": { "$ref": "#/$defs/Limits" },
        "port": { "description": "0: any", "type": "integer", "minimum": 0, "maximum": 65535 }
      },
      "required": ["id", "op", "app", "lock", "components"],
      "additionalProperties": false
    },
    "UnloadCommand": {
      "type": "object",
      "properties": {
        "id": { "$ref": "#/$defs/Id" },
        "op": { "const": "unload" },
        "app": { "$ref": "#/$defs/AppId" },
        "prune": { "description": "Also delete the compiled files no loaded application uses", "type": "boolean" }
      },
      "required": ["id", "op", "app"],
      "additionalProperties": false
    },
    "IdleCommand": {
      "type": "object",
      "properties": { "id": { "$ref": "#/$defs/Id" }, "op": { "const": "idle" }, "app": { "$ref": "#/$defs/AppId" } },
      "required": ["id", "op", "app"],
      "additionalProperties": false
    },
    "StatsCommand": {
      "type": "object",
      "properties": { "id": { "$ref": "#/$defs/Id" }, "op": { "const": "stats" } },
      "required": ["id", "op"],
      "additionalProperties": false
    },
    "PruneCommand": {
      "type": "object",
      "properties": { "id": { "$ref": "#/$defs/Id" }, "op": { "const": "prune" } },
      "required": ["id", "op"],
      "additionalProperties": false
    },
    "LoadReply": {
      "type": "object",
      "properties": { "id": { "$ref": "#/$defs/Id" }, "ok": { "const": true }, "url": { "type": "string", "pattern": "^http://127\\.0\\.0\\.1:[0-9]+$" } },
      "required": ["id", "ok", "url"],
      "additionalProperties": false
    },
    "UnloadReply": {
      "type": "object",
      "properties": { "id": { "$ref": "#/$defs/Id" }, "ok": { "const": true }, "removed": { "$ref": "#/$defs/Digests" } },
      "required": ["id", "ok", "removed"],
      "additionalProperties": false
    },
    "IdleReply": {
      "type": "object",
      "properties": { "id": { "$ref": "#/$defs/Id" }, "ok": { "const": true } },
      "required": ["id", "ok"],
      "additionalProperties": false
    },
    "ComponentStats": {
      "type": "object",
      "properties": {
        "latency": { "description": "Requests per latency bucket", "type": "array", "items": { "$ref": "#/$defs/Count" } },
        "errors": { "description": "5xx answers", "$ref": "#/$defs/Count" }
      },
      "required": ["latency", "errors"],
      "additionalProperties": false
    },
    "AppStats": {
      "type": "object",
      "properties": {
        "requests": { "$ref": "#/$defs/Count" },
        "cpuMs": { "type": "number", "minimum": 0 },
        "wallMs": { "type": "number", "minimum": 0 },
        "timeouts": { "$ref": "#/$defs/Count" },
        "traps": { "$ref": "#/$defs/Count" },
        "memoryRefusals": { "$ref": "#/$defs/Count" },
        "bodyRefusals": { "$ref": "#/$defs/Count" },
        "responseCuts": { "$ref": "#/$defs/Count" },
        "notFound": { "$ref": "#/$defs/Count" },
        "hostRefusals": { "$ref": "#/$defs/Count" },
        "busyRefusals": { "$ref": "#/$defs/Count" },
        "poolRefusals": { "$ref": "#/$defs/Count" },
        "budgetRefusals": { "$ref": "#/$defs/Count" },
        "outboundRefusals": { "$ref": "#/$defs/Count" },
        "running": { "description": "Its requests holding a turn now", "$ref": "#/$defs/Count" },
        "waiting": { "description": "Its requests waiting for a turn now", "$ref": "#/$defs/Count" },
        "port": { "type": "integer", "minimum": 1, "maximum": 65535 },
        "idle": { "type": "boolean" },
        "memoryBytes": { "description": "What its instances' memories hold now", "$ref": "#/$defs/Count" },
        "components": { "type": "object", "additionalProperties": { "$ref": "#/$defs/ComponentStats" } }
      },
      "required": ["requests", "cpuMs", "wallMs", "timeouts", "traps", "memoryRefusals", "bodyRefusals", "responseCuts", "notFound", "hostRefusals", "busyRefusals", "poolRefusals", "budgetRefusals", "outboundRefusals", "running", "waiting", "port", "idle", "memoryBytes", "components"],
      "additionalProperties": false
    },
    "StatsReply": {
      "type": "object",
      "properties": {
        "id": { "$ref": "#/$defs/Id" },
        "ok": { "const": true },
        "apps": { "type": "object", "additionalProperties": { "$ref": "#/$defs/AppStats" } },
        "appsInMemory": { "description": "Applications built and not yet freed", "$ref": "#/$defs/Count" },
        "memoryBudget": {
          "type": "object",
          "properties": { "limitBytes": { "$ref": "#/$defs/Count" }, "usedBytes": { "$ref": "#/$defs/Count" } },
          "required": ["limitBytes", "usedBytes"],
          "additionalProperties": false
        },
        "threads": { "description": "The runtime's threads serving requests", "$ref": "#/$defs/Count" }
      },
      "required": ["id", "ok", "apps", "appsInMemory", "memoryBudget", "threads"],
      "additionalProperties": false
    },
    "PruneReply": {
      "type": "object",
      "properties": { "id": { "$ref": "#/$defs/Id" }, "ok": { "const": true }, "removed": { "$ref": "#/$defs/Digests" } },
      "required": ["id", "ok", "removed"],
      "additionalProperties": false
    },
    "Failure": {
      "description": "Any command's failure; id null when the line was not JSON",
      "type": "object",
      "properties": { "id": { "anyOf": [{ "$ref": "#/$defs/Id" }, { "type": "null" }] }, "ok": { "const": false }, "error": { "type": "string" } },
      "required": ["id", "ok", "error"],
      "additionalProperties": false
    },
    "AwakeEvent": {
      "description": "A request loaded an idle application again",
      "type": "object",
      "properties": { "event": { "const": "awake" }, "app": { "$ref": "#/$defs/AppId" } },
      "required": ["event", "app"],
      "additionalProperties": false
    },
    "Command": {
      "oneOf": [
        { "$ref": "#/$defs/LoadCommand" },
        { "$ref": "#/$defs/UnloadCommand" },
        { "$ref": "#/$defs/IdleCommand" },
        { "$ref": "#/$defs/StatsCommand" },
        { "$ref": "#/$defs/PruneCommand" }
      ]
    },
    "Event": { "oneOf": [{ "$ref": "#/$defs/AwakeEvent" }] }
  }
} as const
