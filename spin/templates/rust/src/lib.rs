//! The function's handler: Spin calls it for every request on the function's route.
use spin_sdk::http::{IntoResponse, Request, Response};
use spin_sdk::http_component;

#[http_component]
fn handle(req: Request) -> anyhow::Result<impl IntoResponse> {
    // stderr is the application's log.
    eprintln!("{{function}}: {}", req.path());
    Ok(Response::builder()
        .status(200)
        .header("content-type", "text/plain")
        .header("x-request-path", req.path())
        .body("hello from {{function}}\n")
        .build())
}
