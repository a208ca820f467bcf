//! Bringing a night back after Nightshift's own end: what a session's journal says and what to do
//! with it are the model's ([`Replay`], [`verdict`], re-exported here); reading the journal is here.

pub use nightshift_model::restore::*;

use crate::event::{Event, EventKind};
use crate::store::{SessionRow, Store, StoreError};

/// How far back a session's journal is read for its last words.
const LOOKBACK: usize = 5000;

/// The journal of `row` as [`Replay`]; `None` when nothing in it can be read.
pub fn replay(store: &Store, row: &SessionRow) -> Result<Option<Replay>, StoreError> {
    let contract = store.contract(&row.id)?;
    let events: Vec<Event> =
        store.recent_events(&row.id, LOOKBACK)?.iter().filter_map(|e| serde_json::from_str(&e.body).ok()).collect();
    let samples: Vec<crate::usage::Sample> = store
        .events_named(&row.id, &["usage"])?
        .iter()
        .filter_map(|e| match serde_json::from_str(&e.body) {
            Ok(Event { kind: EventKind::Usage { sample }, .. }) => Some(sample),
            _ => None,
        })
        .collect();
    let facts = Row {
        command: row.command.clone(),
        cwd: row.cwd.clone(),
        agent: row.agent.clone(),
        preset: row.preset.clone(),
        created: row.created.clone(),
        account: row.account(),
        kept: row.kept.is_some(),
    };
    Ok(nightshift_model::restore::replay(&facts, contract, &events, &samples))
}
