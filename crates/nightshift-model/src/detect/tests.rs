use super::*;
use crate::agent::Dialog;

const MS: fn(u64) -> Duration = Duration::from_millis;

fn working() -> Verdict {
    Verdict {
        working: Some("the footer shows 'esc to interrupt'".into()),
        dialog: None,
        prompt: true,
        interrupted: false,
    }
}

fn at_prompt() -> Verdict {
    Verdict { working: None, dialog: None, prompt: true, interrupted: false }
}

/// Feeds output every `every` from `from` for `len`, with a frame after each chunk.
fn run(
    d: &mut Detector,
    t0: Instant,
    from: Duration,
    len: Duration,
    every: Duration,
    v: &Verdict,
) -> Vec<(Duration, Transition)> {
    let mut out = Vec::new();
    let mut t = from;
    while t <= from + len {
        out.extend(d.on_output(t0 + t).map(|tr| (t, tr)));
        out.extend(d.on_frame(t0 + t + MS(30), v.clone()).map(|tr| (t, tr)));
        t += every;
    }
    out
}

#[test]
fn idle_needs_the_quiet_window_and_no_working_signal() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_output(t0);
    assert_eq!(d.on_frame(t0 + MS(30), at_prompt()), None);
    assert_eq!(d.next_check(), Some(t0 + MS(2000)));
    assert_eq!(d.on_tick(t0 + MS(1999)), None);
    let tr = d.on_tick(t0 + MS(2000)).expect("idle after the quiet window");
    assert_eq!(tr.to, Activity::Idle);
    assert!(tr.reason.contains("quiet for 2.0 s"), "{}", tr.reason);
    assert_eq!(d.next_check(), None);
}

#[test]
fn a_turn_needs_steady_output_that_the_screen_confirms() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_tick(t0 + MS(2000)).unwrap();
    // A keystroke echo: one burst, no working signal.
    assert!(run(&mut d, t0, MS(3000), MS(0), MS(100), &at_prompt()).is_empty());
    // A prompt redraw storm without a working line is not a turn either.
    assert!(run(&mut d, t0, MS(4000), MS(2000), MS(100), &at_prompt()).is_empty());
    // The working line with only a short burst behind it: not yet.
    assert!(run(&mut d, t0, MS(8000), MS(300), MS(100), &working()).is_empty());
    // Sustained output with the working line: a turn.
    let trs = run(&mut d, t0, MS(12000), MS(2000), MS(120), &working());
    assert_eq!(trs.len(), 1, "{trs:?}");
    assert_eq!(trs[0].1.to, Activity::Working);
    assert!(trs[0].0 >= MS(12600), "not before the streak is long enough: {:?}", trs[0].0);
    assert!(trs[0].1.reason.contains("esc to interrupt"));
}

#[test]
fn a_working_signal_on_every_frame_of_slow_repaints_is_a_turn() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_tick(t0 + MS(2000)).unwrap();
    // Repaints once a second (a retry countdown), each showing the working signal.
    let trs = run(&mut d, t0, MS(3000), MS(3000), MS(1000), &working());
    assert_eq!(trs.len(), 1, "{trs:?}");
    assert_eq!(trs[0].0, MS(4000), "the second frame confirms it");
    assert!(trs[0].1.reason.contains("on every frame"), "{}", trs[0].1.reason);
    // A frame without the signal resets the count.
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_tick(t0 + MS(2000)).unwrap();
    d.on_output(t0 + MS(3000));
    d.on_frame(t0 + MS(3000), working());
    d.on_output(t0 + MS(4000));
    d.on_frame(t0 + MS(4000), at_prompt());
    d.on_output(t0 + MS(5000));
    assert_eq!(d.on_frame(t0 + MS(5000), working()), None);
}

#[test]
fn working_holds_through_a_long_turn_and_ends_quiet_window_after_the_last_output() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    let trs = run(&mut d, t0, MS(0), MS(20_000), MS(150), &working());
    assert_eq!(trs.iter().map(|t| t.1.to).collect::<Vec<_>>(), [Activity::Working]);
    // The turn ends: the last frames show the finished line, then nothing.
    let end = MS(20_100);
    d.on_output(t0 + end);
    assert_eq!(d.on_frame(t0 + end + MS(30), at_prompt()), None);
    assert_eq!(d.next_check(), Some(t0 + end + MS(2000)));
    assert_eq!(d.on_tick(t0 + end + MS(2000)).unwrap().to, Activity::Idle);
}

#[test]
fn a_dialog_is_waiting_for_input_and_the_answer_resumes_the_turn() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    run(&mut d, t0, MS(0), MS(1000), MS(100), &working());
    let dialog = Verdict {
        working: None,
        dialog: Some(Dialog::new(crate::agent::DialogKind::Question, Some("Which database?".into()))),
        ..Verdict::default()
    };
    d.on_output(t0 + MS(1100));
    let tr = d.on_frame(t0 + MS(1130), dialog).unwrap();
    assert_eq!(tr.to, Activity::WaitingInput);
    assert!(tr.reason.contains("question dialog: Which database?"), "{}", tr.reason);
    assert_eq!(d.next_check(), None, "a dialog never times out into idle");
    let trs = run(&mut d, t0, MS(9000), MS(1000), MS(100), &working());
    assert_eq!(trs.last().unwrap().1.to, Activity::Working);
}

#[test]
fn a_dialog_that_replaces_another_in_one_frame_is_reported_as_a_new_one() {
    // Two questions of one call: the second is drawn in the first one's place, no frame between.
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    run(&mut d, t0, MS(0), MS(1000), MS(100), &working());
    let question = |text: &str| Verdict {
        working: None,
        dialog: Some(Dialog::new(crate::agent::DialogKind::Question, Some(text.into()))),
        prompt: false,
        interrupted: false,
    };
    d.on_output(t0 + MS(1100));
    let first = d.on_frame(t0 + MS(1130), question("Which port should the server listen on?"));
    assert_eq!(first.map(|t| t.to), Some(Activity::WaitingInput));
    d.on_output(t0 + MS(5000));
    assert_eq!(d.on_frame(t0 + MS(5030), question("Which port should the server listen on?")), None, "a redraw");
    d.on_output(t0 + MS(9000));
    let second = d.on_frame(t0 + MS(9030), question("Drop the production database now?"));
    let second = second.expect("the dialog that replaced the first is reported");
    assert_eq!(second.to, Activity::WaitingInput);
    assert_eq!(second.verdict.dialog.unwrap().text.as_deref(), Some("Drop the production database now?"));
    assert_eq!(d.on_tick(t0 + MS(9500)), None);
}

#[test]
fn generic_goes_by_output_alone() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), false, t0);
    let trs = run(&mut d, t0, MS(0), MS(3000), MS(200), &Verdict::default());
    assert_eq!(trs.len(), 1);
    assert_eq!(trs[0].1.to, Activity::Working);
    assert!(trs[0].1.reason.contains("steady output"));
    assert_eq!(d.on_tick(t0 + MS(3000) + MS(1999)), None);
    assert_eq!(d.on_tick(t0 + MS(3000) + MS(2000)).unwrap().to, Activity::Idle);
    // One line now and then is not work.
    assert!(run(&mut d, t0, MS(10_000), MS(0), MS(200), &Verdict::default()).is_empty());
}

#[test]
fn the_quiet_window_is_the_sessions_setting() {
    let t0 = Instant::now();
    let cfg = DetectConfig { quiet: Duration::from_secs(10), ..DetectConfig::default() };
    let mut d = Detector::new(cfg, true, t0);
    d.on_output(t0);
    d.on_frame(t0, at_prompt());
    assert_eq!(d.on_tick(t0 + MS(9999)), None);
    assert_eq!(d.on_tick(t0 + MS(10_000)).unwrap().to, Activity::Idle);
}

#[test]
fn a_fast_answer_is_a_turn_when_the_client_says_so() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_frame(t0, at_prompt());
    assert_eq!(d.on_tick(t0 + MS(2100)).map(|t| t.to), Some(Activity::Idle));
    // A 0.3 s answer: too short for the screen's rules, a turn by the client's word.
    let t = d.on_turn_started(t0 + MS(3000)).unwrap();
    assert_eq!(t.to, Activity::Working);
    assert!(t.reason.contains("UserPromptSubmit"), "{}", t.reason);
    d.on_output(t0 + MS(3100));
    d.on_frame(t0 + MS(3130), at_prompt());
    let t = d.on_turn_ended(t0 + MS(3300), TurnEnd::Stop).unwrap();
    assert_eq!(t.to, Activity::Idle, "no quiet window to wait out: the Stop and a frame with no working signal");
    assert!(t.reason.contains("Stop hook"), "{}", t.reason);
}

#[test]
fn after_a_stop_idle_waits_for_the_screen_to_agree() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_turn_started(t0);
    d.on_output(t0 + MS(100));
    d.on_frame(t0 + MS(130), working());
    assert_eq!(d.on_turn_ended(t0 + MS(200), TurnEnd::Stop), None, "the spinner is still drawn");
    d.on_output(t0 + MS(400));
    let t = d.on_frame(t0 + MS(430), at_prompt()).unwrap();
    assert_eq!(t.to, Activity::Idle);
    assert_eq!(d.take_drift(), None);
}

#[test]
fn codex_notify_ends_a_turn_the_screen_started_and_the_screen_starts_the_next() {
    // Codex says nothing when a turn starts, and notifies when it completed: streaming, its
    // screen's working signal is the title spinner and its program state.
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_frame(t0, at_prompt());
    d.on_tick(t0 + MS(2000)).unwrap();
    let turn = run(&mut d, t0, MS(3000), MS(3000), MS(100), &working());
    assert_eq!(turn.first().map(|(_, t)| t.to), Some(Activity::Working));
    assert_eq!(d.on_turn_ended(t0 + MS(6050), TurnEnd::Notify), None, "the frame still says working");
    d.on_output(t0 + MS(6060));
    let t = d.on_frame(t0 + MS(6090), at_prompt()).expect("idle with the first frame that agrees");
    assert_eq!(t.to, Activity::Idle);
    assert!(t.reason.contains("Codex's notify"), "{}", t.reason);
    assert_eq!(d.take_drift(), None);
    // The next turn: no word from Codex until it ends, so the screen's rules decide.
    let next = run(&mut d, t0, MS(8000), MS(1000), MS(100), &working());
    assert_eq!(next.first().map(|(_, t)| t.to), Some(Activity::Working), "{next:?}");
}

#[test]
fn a_notify_while_codex_keeps_working_is_drift_named_after_it() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    run(&mut d, t0, MS(0), MS(1000), MS(100), &working());
    d.on_turn_ended(t0 + MS(1050), TurnEnd::Notify);
    let mut at = t0 + MS(1100);
    while at <= t0 + MS(1050) + DRIFT {
        d.on_output(at);
        d.on_frame(at, working());
        at += MS(200);
    }
    d.on_tick(t0 + MS(1050) + DRIFT);
    assert_eq!(d.take_drift().map(|d| d.hook), Some("agent-turn-complete".to_string()));
}

#[test]
fn a_stop_while_the_screen_keeps_working_is_drift() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_turn_started(t0);
    d.on_frame(t0 + MS(100), working());
    d.on_turn_ended(t0 + MS(200), TurnEnd::Stop);
    assert_eq!(d.next_check(), Some(t0 + MS(200) + DRIFT));
    let mut at = t0 + MS(300);
    while at < t0 + MS(200) + DRIFT {
        d.on_output(at);
        d.on_frame(at, working());
        at += MS(200);
    }
    d.on_tick(t0 + MS(200) + DRIFT);
    let drift = d.take_drift().expect("drift");
    assert_eq!(drift.hook, "Stop");
    assert!(drift.screen.starts_with("working"), "{drift:?}");
    d.on_tick(t0 + MS(200) + DRIFT * 2);
    assert_eq!(d.take_drift(), None, "said once");
}

#[test]
fn a_quiet_idle_screen_with_no_stop_is_drift_and_the_screen_wins() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_turn_started(t0);
    d.on_output(t0 + MS(50));
    d.on_frame(t0 + MS(80), at_prompt());
    assert_eq!(d.on_tick(t0 + MS(2100)), None, "the client said a turn runs: quiet alone is not idle");
    let due = d.next_check().unwrap();
    assert_eq!(due, t0 + MS(50) + DetectConfig::default().quiet + DRIFT);
    let t = d.on_tick(due).unwrap();
    assert_eq!(t.to, Activity::Idle);
    assert_eq!(d.take_drift().unwrap().hook, "a turn open with no Stop");
}

#[test]
fn a_permission_prompt_carries_the_tool_and_command_the_hook_named() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_turn_started(t0);
    let asked =
        Dialog::new(crate::agent::DialogKind::Permission, Some("Claude needs your permission: Bash touch x".into()));
    let t = d.on_asked(t0 + MS(500), asked).unwrap();
    assert_eq!(t.to, Activity::WaitingInput);
    assert_eq!(t.verdict.dialog.unwrap().text.as_deref(), Some("Claude needs your permission: Bash touch x"));
}

/// The client's Notification comes 6 s after its dialog opened (2.1.332), often after the user
/// has read it; the dialog answered, the session must not stay waiting on it.
fn dialog_answered_after_the_clients_notification(kind: crate::agent::DialogKind) -> Detector {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_turn_started(t0);
    d.on_tool(crate::agent::Subject::of("AskUserQuestion", &serde_json::json!({"questions": []})));
    d.on_output(t0 + MS(100));
    let on_screen = Dialog::new(kind, Some("Which database?".into()));
    let frame = Verdict { working: None, dialog: Some(on_screen), prompt: false, interrupted: false };
    assert_eq!(d.on_frame(t0 + MS(130), frame).unwrap().to, Activity::WaitingInput);
    let asked = Dialog::new(crate::agent::DialogKind::Permission, Some("Claude needs your permission".into()));
    assert_eq!(d.on_asked(t0 + MS(6130), asked), None, "already waiting");
    // Answered: the dialog leaves the screen and the turn goes on.
    let trs = run(&mut d, t0, MS(9000), MS(1000), MS(100), &working());
    assert_eq!(trs.first().map(|(_, t)| t.to), Some(Activity::Working), "{trs:?}");
    d
}

#[test]
fn a_question_answered_after_the_clients_notification_is_no_longer_waited_on() {
    let mut d = dialog_answered_after_the_clients_notification(crate::agent::DialogKind::Question);
    let t = d.on_turn_ended(d.last_output.unwrap() + MS(100), TurnEnd::Stop);
    assert_eq!(t.map(|t| t.to), None, "the spinner is still drawn");
    let end = d.last_output.unwrap() + MS(200);
    d.on_output(end);
    assert_eq!(d.on_frame(end + MS(30), at_prompt()).map(|t| t.to), Some(Activity::Idle));
}

#[test]
fn a_permission_answered_after_the_clients_notification_is_no_longer_waited_on() {
    let mut d = dialog_answered_after_the_clients_notification(crate::agent::DialogKind::Permission);
    let end = d.last_output.unwrap() + MS(100);
    d.on_output(end);
    d.on_frame(end + MS(30), at_prompt());
    assert_eq!(d.on_turn_ended(end + MS(50), TurnEnd::Stop).map(|t| t.to), Some(Activity::Idle));
}

#[test]
fn a_dialog_only_the_hook_saw_ends_when_the_work_goes_on() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_turn_started(t0);
    let asked = Dialog::new(crate::agent::DialogKind::Permission, Some("Claude needs your permission".into()));
    assert_eq!(d.on_asked(t0 + MS(6000), asked).unwrap().to, Activity::WaitingInput);
    // The screen never read it as a dialog; once work shows again, it was answered.
    let trs = run(&mut d, t0, MS(9000), MS(1000), MS(100), &working());
    assert_eq!(trs.first().map(|(_, t)| t.to), Some(Activity::Working), "{trs:?}");
}

#[test]
fn a_turn_the_user_interrupted_is_idle_after_the_quiet_window_without_a_stop() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_turn_started(t0);
    d.on_output(t0 + MS(50));
    d.on_frame(t0 + MS(80), working());
    d.on_output(t0 + MS(1000));
    let interrupted = Verdict { prompt: true, interrupted: true, ..Verdict::default() };
    assert_eq!(d.on_frame(t0 + MS(1030), interrupted), None, "not before the quiet window");
    let due = d.next_check().unwrap();
    assert_eq!(due, t0 + MS(1000) + DetectConfig::default().quiet, "no drift wait");
    let t = d.on_tick(due).unwrap();
    assert_eq!(t.to, Activity::Idle);
    assert!(t.reason.contains("interrupted"), "{}", t.reason);
    assert_eq!(d.take_drift(), None, "an interrupt is no drift");
}

#[test]
fn a_dialog_the_screen_sees_first_names_the_tool_the_hook_announced() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_turn_started(t0);
    d.on_tool(crate::agent::Subject::of("Bash", &serde_json::json!({"command": "touch x"})));
    d.on_output(t0 + MS(50));
    let dialog = Dialog::new(crate::agent::DialogKind::Permission, Some("Do you want to proceed?".into()));
    let frame = Verdict { working: None, dialog: Some(dialog), prompt: false, interrupted: false };
    let t = d.on_frame(t0 + MS(80), frame).unwrap();
    assert_eq!(t.to, Activity::WaitingInput);
    assert_eq!(t.verdict.dialog.unwrap().text.as_deref(), Some("Do you want to proceed? — Bash: touch x"));
}

/// Drives a watcher over the real client's working frame: a repaint every `every` for `len`,
/// waking when it asks; returns when frames were judged.
fn watch(w: &mut Watcher, screen: &Screen, t0: Instant, len: Duration, every: Duration) -> Vec<Duration> {
    let mut judged = Vec::new();
    let mut t = t0;
    let mut next_output = t0;
    while t < t0 + len {
        let wake = w.next_wakeup().unwrap_or(next_output);
        if next_output <= wake {
            t = next_output;
            w.output(t);
            next_output += every;
        } else {
            t = wake;
            w.wake(t, screen);
            if w.take_limit_region().is_some() {
                judged.push(t - t0);
            }
        }
    }
    judged
}

#[test]
fn a_worked_turn_is_judged_once_a_second_and_its_end_at_once() {
    let mut screen = Screen::new(crate::screen::PtySize::new(120, 40));
    screen.feed(include_bytes!("../../../../tests/fixtures/claude-code/2.1.332/working/02-working-t2s.ansi.txt"));
    let t0 = Instant::now();
    let mut w = Watcher::new(Adapter::builtin(crate::AgentKind::Claude), DetectConfig::default(), t0);
    // Before the turn is seen, each repaint (every 120 ms, as the client's spinner) is judged.
    let before = watch(&mut w, &screen, t0, MS(1200), MS(120));
    assert_eq!(w.state(), Some(Activity::Working), "{before:?}");
    assert!(before.len() >= 5, "{before:?}");
    // While the turn is worked: at most one judged frame per WORKING_FRAME_EVERY.
    let t1 = t0 + MS(1200);
    let during = watch(&mut w, &screen, t1, MS(4000), MS(120));
    assert!((3..=5).contains(&during.len()), "{} frames in 4 s: {during:?}", during.len());
    assert!(during.windows(2).all(|p| p[1] - p[0] >= WORKING_FRAME_EVERY), "{during:?}");
    // The client says the turn ended: the frame held back is judged within the settle time.
    let t2 = t1 + MS(4000);
    w.output(t2);
    w.turn_ended(t2 + MS(5), TurnEnd::Stop);
    assert!(w.next_wakeup().unwrap() <= t2 + MS(5) + FRAME_SETTLE, "{:?}", w.next_wakeup().unwrap() - t2);
}

#[test]
fn a_short_quiet_window_judges_a_worked_turn_before_it_ends() {
    let mut screen = Screen::new(crate::screen::PtySize::new(120, 40));
    screen.feed(include_bytes!("../../../../tests/fixtures/claude-code/2.1.332/working/02-working-t2s.ansi.txt"));
    let t0 = Instant::now();
    let cfg = DetectConfig { quiet: MS(800), ..DetectConfig::default() };
    let mut w = Watcher::new(Adapter::builtin(crate::AgentKind::Claude), cfg, t0);
    watch(&mut w, &screen, t0, MS(1200), MS(120));
    assert_eq!(w.state(), Some(Activity::Working));
    let during = watch(&mut w, &screen, t0 + MS(1200), MS(4000), MS(120));
    assert!(during.windows(2).all(|p| p[1] - p[0] <= MS(400) + FRAME_SETTLE), "{during:?}");
}

#[test]
fn a_working_signal_left_on_the_screen_as_a_turn_ends_is_not_new_work() {
    // A quick turn, its frames held back while it ran; the Stop comes, and the next frame is the
    // client's last redraw of it, the footer's "esc to interrupt" not yet wiped. That is the turn
    // that ended, not one the client started by itself.
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_frame(t0, at_prompt());
    d.on_turn_started(t0 + MS(10)).expect("working on the hook");
    let mut at = MS(20);
    while at <= MS(700) {
        d.on_output(t0 + at);
        at += MS(50);
    }
    let idle = d.on_turn_ended(t0 + MS(700), TurnEnd::Stop).expect("idle on the Stop");
    assert_eq!(idle.to, Activity::Idle);
    d.on_output(t0 + MS(720));
    assert_eq!(d.on_frame(t0 + MS(730), working()), None, "a leftover of the turn that ended");
    d.on_output(t0 + MS(735));
    assert_eq!(d.on_frame(t0 + MS(765), at_prompt()), None);
    assert_eq!(d.state(), Some(Activity::Idle));
    // A prompt typed: work on the screen is a turn at once (Codex's next, which no hook opens).
    d.on_typed(t0 + MS(800));
    let next = run(&mut d, t0, MS(800), MS(1000), MS(100), &working());
    assert_eq!(next.first().map(|(at, t)| (*at, t.to)), Some((MS(800), Activity::Working)), "{next:?}");
}

#[test]
fn work_that_goes_on_right_after_a_stop_is_a_turn_once_it_holds_for_a_streak() {
    let t0 = Instant::now();
    let mut d = Detector::new(DetectConfig::default(), true, t0);
    d.on_frame(t0, at_prompt());
    d.on_turn_started(t0 + MS(10)).expect("working on the hook");
    d.on_output(t0 + MS(500));
    d.on_turn_ended(t0 + MS(700), TurnEnd::Stop).expect("idle on the Stop");
    // The client goes on by itself at once, frame after frame.
    let streak = DetectConfig::default().turn_streak;
    let on = run(&mut d, t0, MS(720), MS(1000), MS(100), &working());
    let (at, t) = on.first().expect("a turn");
    assert_eq!(t.to, Activity::Working);
    assert!(*at + MS(30) >= MS(750) + streak, "held for a streak first: {on:?}");
    assert_eq!(d.take_drift(), None);
}
