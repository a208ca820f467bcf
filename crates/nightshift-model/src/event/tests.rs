use super::*;
use chrono::TimeZone;

#[test]
fn state_event_has_the_contract_fields() {
    let ev = Event {
        ts: Utc.with_ymd_and_hms(2026, 11, 30, 13, 45, 0).unwrap(),
        session: SessionId::from("0badcafe".to_string()),
        kind: EventKind::State {
            state: SessionState::Exited,
            reason: "process exited with code 3".into(),
            pid: None,
            exit_code: Some(3),
            signal: None,
            error: None,
            dialog: None,
            last_screen: None,
        },
    };
    let json: serde_json::Value = serde_json::from_str(&ev.to_json()).unwrap();
    assert_eq!(json["ts"], "2026-11-30T13:45:00.000Z");
    assert_eq!(json["session"], "0badcafe");
    assert_eq!(json["event"], "state");
    assert_eq!(json["state"], "exited");
    assert_eq!(json["reason"], "process exited with code 3");
    assert_eq!(json["exit_code"], 3);
    assert!(json.get("signal").is_none());
    let back: Event = serde_json::from_str(&ev.to_json()).unwrap();
    assert_eq!(back, ev);
}

#[test]
fn usage_events_carry_the_percentages_flat() {
    let ev = Event {
        ts: Utc.with_ymd_and_hms(2026, 11, 30, 13, 45, 0).unwrap(),
        session: SessionId::from("0badcafe".to_string()),
        kind: EventKind::Usage {
            sample: crate::usage::Sample {
                five_hour_pct: Some(35.0),
                five_hour_resets_at: Some(Utc.with_ymd_and_hms(2026, 11, 30, 17, 0, 0).unwrap()),
                ..Default::default()
            },
        },
    };
    let json: serde_json::Value = serde_json::from_str(&ev.to_json()).unwrap();
    assert_eq!(json["event"], "usage");
    assert_eq!(json["five_hour_pct"], 35.0);
    assert_eq!(json["five_hour_resets_at"], "2026-11-30T17:00:00.000Z");
    assert_eq!(serde_json::from_str::<Event>(&ev.to_json()).unwrap(), ev);
}

#[test]
fn session_ids_are_eight_hex_digits() {
    let id = SessionId::generate();
    assert_eq!(id.as_str().len(), 8);
    assert!(id.as_str().chars().all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
}
