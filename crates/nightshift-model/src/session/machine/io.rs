//! What goes into the session machine and what comes out: both clocks at one instant, what a
//! session starts with, its inputs, and the effects the actor carries out.

use super::*;

/// Both clocks at one instant: tokio's for durations, the wall clock for resets "at 3pm".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    pub mono: Instant,
    pub wall: DateTime<Utc>,
}

/// What a session starts with: its contract (what the user armed, as journalled), and what this
/// start adds to it. Everything armed is read from the contract here, in the model; nothing of it
/// is copied on the way.
#[derive(Debug, Clone)]
pub struct Start {
    /// What the user armed. Respawn is armed until the contract's `respawn_until` (its duration
    /// from now when it has none); the budget's time counts from its `started`.
    pub armed: crate::contract::Armed,
    /// The user's time zone: local times (a morning reserve at 07:00) are read in it.
    pub zone: crate::clock::Zone,
    /// The process that runs now.
    pub pid: u32,
    /// The dialogs the agent's adapter calls routine confirmations.
    pub auto_accept: Vec<DialogKind>,
    /// What its respawn cycles type for the context reset and the instructions file.
    pub commands: crate::agent::CycleCommands,
    /// The guard's rules, when the session is guarded (commands refused while nobody watches).
    pub guard: Option<std::sync::Arc<crate::hooks::guard::Rules>>,
    /// Where it carries on from (a restored session's journal and state directory); the default
    /// for a first start.
    pub from: Resumed,
    /// Whether the agent runs in its own sandbox, in words (`sandboxed: …`, `not sandboxed: …`).
    pub sandbox: Option<String>,
    /// Its network fence as the start set it (Nightshift's proxy: what it refuses comes in).
    pub fence: Option<crate::session::FenceView>,
    /// What the canary said of the client it runs, in words (`nightshift doctor --canary`).
    pub canary: Option<String>,
}

/// Where a restored session carries on from: what its journal and the state directory say.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resumed {
    /// The client's conversation: restarts resume it.
    pub conversation: Option<String>,
    /// What its client starts with (the kickstart), never the opening prompt.
    pub prompt: Option<String>,
    /// Paused on this limit from the start (its pending resume).
    pub paused_on: Option<LimitText>,
    /// That limit's reset is known to the second (the client's data, as journalled).
    pub paused_exact: bool,
    /// Every automatic action held from the start (the user had paused it).
    pub held: bool,
    /// What the session spent before this start.
    pub spent: crate::usage::Tally,
    /// The latest handoff the agent wrote, and when: a client started again soon after it is
    /// given it back.
    pub handoff: Option<(String, DateTime<Utc>)>,
    /// A conversation received that handoff already: none after it is given it.
    pub handoff_given: bool,
}

/// What the detector saw change: the agent's activity, with the usage-limit menu on screen when
/// the dialog is a menu (`menu_limit`: the limit its notice says).
#[derive(Debug, Clone, PartialEq)]
pub struct Seen {
    pub transition: Transition,
    pub menu: Option<LimitMenu>,
    pub menu_limit: Option<LimitText>,
}

/// What happened to the session.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The detector changed the agent's activity; `menu` is the usage-limit menu on screen when the
    /// dialog is a menu, and `menu_limit` the limit its notice says.
    Activity {
        transition: Transition,
        menu: Option<LimitMenu>,
        menu_limit: Option<LimitText>,
    },
    /// A whole frame showed the agent in a turn, however short.
    TurnSeen,
    /// The frame's limit-notice region was read: the limit it shows, if any.
    LimitNotice(Option<LimitText>),
    /// The client's word that it now works on the plan's extra usage past a full window.
    ExtraUsage,
    /// The network fence refused a command's connection (`command`: the Bash command running then).
    NetRefused {
        host: String,
        port: u16,
        command: Option<String>,
    },
    /// A host let through the fence from now on, by `by`.
    HostAllowed {
        host: String,
        by: String,
    },
    /// A statusLine sample.
    Sample(crate::usage::Sample),
    /// Text (and maybe Enter) typed into the session, by the user or on their behalf.
    Typed {
        text: String,
        enter: bool,
        by: crate::event::Answerer,
    },
    /// Raw keys from the user's terminal (not journalled).
    Keys(Vec<u8>),
    /// An answer from afar (a phone's button) to the dialog whose [`crate::phone::fingerprint`] is
    /// `dialog`: `keys` are typed only while that dialog is on the screen; answered with
    /// [`Effect::Answered`].
    Answer {
        dialog: String,
        keys: Vec<u8>,
        by: crate::event::Answerer,
    },
    Stop {
        source: String,
        kind: StopKind,
    },
    ResetBreakers,
    Configure(Change),
    /// The process ended and its last output was read; `last_screen` is what it left on screen.
    Exited {
        exit: Exit,
        last_screen: Vec<String>,
    },
    /// The agent was started again ([`Effect::Spawn`]).
    Started {
        pid: u32,
    },
    /// Starting it again failed.
    SpawnFailed {
        error: String,
        exit_code: i32,
    },
    /// A fingerprint asked for with [`Effect::Measure`].
    Measured {
        purpose: Purpose,
        fingerprint: Option<Fingerprint>,
    },
    /// A hook of the client, answered with [`Effect::Answer`]; `limit` is what a `StopFailure`'s
    /// message says of a usage limit, `facts` what the repository says for the guard.
    ///
    /// A hook that moved the detector (a turn's end, a prompt submitted) carries what it `seen`:
    /// the machine takes that activity first and the hook after it, in this one step, whatever
    /// order the executor heard them in.
    Hook {
        hook: crate::hooks::Hook,
        limit: Option<LimitText>,
        facts: Option<crate::hooks::guard::Facts>,
        seen: Option<Box<Seen>>,
    },
    /// The client's hooks and its screen disagreed (see [`crate::detect::Drift`]); the screen as it
    /// was is kept at `capture`.
    Drift {
        drift: crate::detect::Drift,
        capture: Option<String>,
    },
    /// What the journal knows of each account's plan windows ([`Effect::Meters`]), or why it
    /// could not be read.
    Meters(Result<Vec<Meter>, String>),
    /// What the edge knows of the failover agent before a move ([`Effect::CheckOther`]).
    OtherChecked(OtherAgent),
    /// The machine woke from a suspend (asleep from `from`): a pending resume reads the usage again
    /// ([`Effect::ReadUsage`]) before it goes out.
    Woke {
        from: DateTime<Utc>,
    },
    /// The usage as read again after a wake: the session's account's newest plan windows, when
    /// anything knows them.
    Reread(Option<crate::usage::Sample>),
    /// What the folder holds, read for a handoff ([`Effect::Gather`]).
    Gathered(crate::session::handoff::Gathered),
    /// Time passed (at the deadline the machine asked for, or later).
    Tick,
}

/// Why progress is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// Where the working tree stands as the session starts.
    Baseline,
    /// A respawn cycle started: the no-progress breaker's verdict.
    Cycle(u32),
    /// The agent exited and is to be started again: did its life change anything?
    Restart,
}

/// What the actor must do, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Journal this event.
    Emit(EventKind),
    /// Queue bytes for the agent's input `after` everything queued before them.
    Write { after: Duration, bytes: Vec<u8> },
    /// Signal the agent's process group.
    Signal(Signal),
    /// Start the agent again, resuming its conversation (Claude: `--resume <id>` when its id is
    /// known, else `--continue`).
    Spawn { conversation: Option<String>, prompt: Option<String> },
    /// Keep the agent's handoff in the state directory (never the repository).
    SaveHandoff { text: String },
    /// Fingerprint the working tree without `exclude`, off the runtime, and answer with
    /// [`Input::Measured`].
    Measure { purpose: Purpose, exclude: Vec<String> },
    /// The answer to [`Input::ResetBreakers`].
    Reply(String),
    /// The answer to [`Input::Answer`]: typed, or why not.
    Answered(Result<(), crate::phone::Refusal>),
    /// The answer to [`Input::Hook`], for the client.
    Answer(crate::hooks::Answer),
    /// Keep the working tree's uncommitted work under a salvage ref (`git::salvage`), off the
    /// runtime, and journal what was kept or why not; done before the session's end is reported.
    Salvage { reason: String },
    /// Whether the client `contract` starts (the failover agent's) has a login, and what the
    /// journal last read of its account's windows, and answer with [`Input::OtherChecked`].
    CheckOther { contract: Box<crate::contract::Contract> },
    /// Read every account's latest plan windows from the journal, and whether each of `accounts`
    /// (the ones the session could move to) has a login, and answer with [`Input::Meters`].
    Meters { accounts: Vec<crate::agent::Account> },
    /// Read the session's account's plan windows again, from the client's own data where it keeps
    /// them (Codex's rollout) or the journal's newest sample, and answer with [`Input::Reread`].
    ReadUsage,
    /// Start the agent again under `account`, on a fresh conversation (never the old account's),
    /// with `prompt` to start from when there is one (the handoff); the journal's session row
    /// takes the account.
    SwitchAccount { account: crate::agent::Account, prompt: Option<String> },
    /// Read the folder for a handoff Nightshift builds — the commits since `since`, what is not
    /// committed, the `files` the prompts name (regular files inside the folder only), with git's
    /// safe options, off the runtime — and answer with [`Input::Gathered`].
    Gather { since: DateTime<Utc>, files: Vec<String> },
}

/// The failover agent as the edge finds it before a move.
#[derive(Debug, Clone, PartialEq)]
pub struct OtherAgent {
    /// Whether its client has a login; `Err`: why not, with how to log in.
    pub login: Result<(), String>,
    /// The journal's latest reading of its account's windows, when any session reported one.
    pub meter: Option<super::Meter>,
}
