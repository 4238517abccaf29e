//! A WAGI request's body, gathered whole before the program starts (a CGI program reads its
//! stdin to the end), bounded by the application's cap and charged to the budget as it comes.

use crate::budget::Charge;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;

pub enum Gathered {
    TooLarge,
    OverBudget,
    Broken,
}

/// The whole request body, at most `cap` bytes, each part charged to the budget as it comes.
pub async fn gather(mut body: Incoming, cap: u64, charge: &Charge) -> Result<Bytes, Gathered> {
    let mut gathered = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|_| Gathered::Broken)?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if gathered.len() as u64 + data.len() as u64 > cap {
            return Err(Gathered::TooLarge);
        }
        charge
            .take(data.len() as u64)
            .map_err(|_| Gathered::OverBudget)?;
        gathered.extend_from_slice(&data);
    }
    Ok(gathered.freeze())
}
