//! The catalog of actions: names, versions, parameters with their types, events.
//!
//! One table drives validation on parse, the JSON Schema and the typing of evaluated
//! parameters at run time.

/// The type of a parameter value.
#[derive(Debug)]
pub(crate) enum Ty {
    /// A string; a plain YAML scalar of another type is taken by its source text.
    Str,
    /// A whole number.
    Int,
    /// Any number.
    Num,
    /// `true` or `false`.
    Bool,
    /// A list of items of one type.
    List(&'static Ty),
    /// A map with known fields.
    Obj(&'static [Field]),
    /// A map of string values (HTTP headers).
    StrMap,
    /// A string, or any other value sent as JSON (an HTTP body).
    Body,
}

/// A named parameter or field.
#[derive(Debug)]
pub(crate) struct Field {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub doc: &'static str,
}

/// What the action does when it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Answer,
    Ringing,
    Hangup,
    Say,
    Play,
    Gather,
    Record,
    StartRecording,
    Dial,
    Bridge,
    Sms,
    Fetch(u8),
    Log,
    Javascript,
    Wait,
}

impl Kind {
    /// Whether the action acts on a live call (skipped once the call has ended).
    pub(crate) fn needs_call(self) -> bool {
        matches!(
            self,
            Kind::Answer
                | Kind::Ringing
                | Kind::Hangup
                | Kind::Say
                | Kind::Play
                | Kind::Gather
                | Kind::Record
                | Kind::StartRecording
                | Kind::Bridge
        )
    }
}

/// An event an action may raise later, with the variable its handler sees the value as.
#[derive(Debug)]
pub(crate) struct EventSpec {
    pub name: &'static str,
    pub binds: &'static str,
    pub doc: &'static str,
}

/// One action at one version.
#[derive(Debug)]
pub(crate) struct ActionSpec {
    pub name: &'static str,
    pub version: u32,
    pub kind: Kind,
    pub params: &'static [Field],
    pub events: &'static [EventSpec],
    pub doc: &'static str,
}

impl ActionSpec {
    /// `name@vN`.
    pub(crate) fn id(&self) -> String {
        format!("{}@v{}", self.name, self.version)
    }
}

const fn req(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field {
        name,
        ty,
        required: true,
        doc,
    }
}

const fn opt(name: &'static str, ty: Ty, doc: &'static str) -> Field {
    Field {
        name,
        ty,
        required: false,
        doc,
    }
}

const PROMPT: &[Field] = &[
    req("what", Ty::Str, "Text spoken before collecting digits."),
    opt(
        "language",
        Ty::Str,
        "Voice language, e.g. en-US (default: defaults.language).",
    ),
];

const TRANSCRIPTION: &[Field] = &[opt("language", Ty::Str, "Language of the transcription.")];

const AUDIO: &[Field] = &[opt(
    "enabled",
    Ty::Bool,
    "Play a waiting sound to the caller during the request.",
)];

const TARGET: &[Field] = &[
    req("number", Ty::Str, "E.164 number to call."),
    opt(
        "timeout",
        Ty::Int,
        "Seconds to ring before giving up (default 30).",
    ),
];

const FETCH_PARAMS: &[Field] = &[
    req("url", Ty::Str, "http(s) URL."),
    opt("method", Ty::Str, "HTTP method (default GET)."),
    opt("headers", Ty::StrMap, "Request headers."),
    opt(
        "body",
        Ty::Body,
        "Request body; a non-string value is sent as JSON.",
    ),
    opt(
        "timeout",
        Ty::Num,
        "Seconds before the request is abandoned (default 10).",
    ),
];

const FETCH_V2_PARAMS: &[Field] = &[
    req("url", Ty::Str, "http(s) URL."),
    opt("method", Ty::Str, "HTTP method (default GET)."),
    opt("headers", Ty::StrMap, "Request headers."),
    opt(
        "body",
        Ty::Body,
        "Request body; a non-string value is sent as JSON.",
    ),
    opt(
        "timeout",
        Ty::Num,
        "Seconds before the request is abandoned (default 10).",
    ),
    opt("audio", Ty::Obj(AUDIO), "Waiting sound during the request."),
];

const READY: &[EventSpec] = &[EventSpec {
    name: "ready",
    binds: "recording",
    doc: "The recording is available; its handler sees it as `recording`.",
}];

/// Every action the interpreter knows.
pub(crate) const ACTIONS: &[ActionSpec] = &[
    ActionSpec {
        name: "answer",
        version: 1,
        kind: Kind::Answer,
        params: &[],
        events: &[],
        doc: "Answer the inbound call.",
    },
    ActionSpec {
        name: "ringing",
        version: 1,
        kind: Kind::Ringing,
        params: &[],
        events: &[],
        doc: "Signal ringing to the caller before answering.",
    },
    ActionSpec {
        name: "hangup",
        version: 1,
        kind: Kind::Hangup,
        params: &[],
        events: &[],
        doc: "Hang up the call; the run's branches end.",
    },
    ActionSpec {
        name: "say",
        version: 2,
        kind: Kind::Say,
        params: &[
            req("what", Ty::Str, "Text to speak."),
            opt(
                "language",
                Ty::Str,
                "Voice language (default: defaults.language).",
            ),
        ],
        events: &[],
        doc: "Speak a text on the call.",
    },
    ActionSpec {
        name: "play",
        version: 1,
        kind: Kind::Play,
        params: &[req("media", Ty::Str, "Audio file sid.")],
        events: &[],
        doc: "Play an audio file on the call.",
    },
    ActionSpec {
        name: "gather",
        version: 2,
        kind: Kind::Gather,
        params: &[
            req("maxDigits", Ty::Int, "Most digits to collect."),
            opt(
                "minDigits",
                Ty::Int,
                "Fewest digits to collect (default 1).",
            ),
            opt(
                "timeout",
                Ty::Int,
                "Seconds to wait for digits (default 10).",
            ),
            opt("finishOnKey", Ty::Str, "Key that ends the input, e.g. #."),
            opt("prompt", Ty::Obj(PROMPT), "Text spoken before collecting."),
        ],
        events: &[],
        doc: "Collect DTMF digits; result {digits, reason}.",
    },
    ActionSpec {
        name: "record",
        version: 1,
        kind: Kind::Record,
        params: &[
            req("maxDuration", Ty::Int, "Longest recording in seconds."),
            opt("finishOnKey", Ty::Str, "Key that ends the recording."),
            opt(
                "transcription",
                Ty::Obj(TRANSCRIPTION),
                "Transcribe the recording.",
            ),
        ],
        events: READY,
        doc: "Record a voicemail; result is the recording.",
    },
    ActionSpec {
        name: "startRecording",
        version: 1,
        kind: Kind::StartRecording,
        params: &[opt(
            "transcription",
            Ty::Obj(TRANSCRIPTION),
            "Transcribe the recording.",
        )],
        events: READY,
        doc: "Start recording the call; events.ready runs when the recording is available.",
    },
    ActionSpec {
        name: "dial",
        version: 1,
        kind: Kind::Dial,
        params: &[
            req("targets", Ty::List(&Ty::Obj(TARGET)), "Numbers to call."),
            opt(
                "answerOnBranch",
                Ty::Str,
                "Branch run on the answered leg when a target answers.",
            ),
            opt("from", Ty::Str, "Caller id shown to the target."),
        ],
        events: &[],
        doc: "Call out; result {ok, status, target}.",
    },
    ActionSpec {
        name: "bridge",
        version: 1,
        kind: Kind::Bridge,
        params: &[],
        events: &[],
        doc: "Connect the answered leg with the original call.",
    },
    ActionSpec {
        name: "sms",
        version: 1,
        kind: Kind::Sms,
        params: &[
            req("to", Ty::List(&Ty::Str), "E.164 recipients."),
            req("body", Ty::Str, "Text of the message."),
            opt("from", Ty::Str, "Sender (empty: chosen by destination)."),
        ],
        events: &[],
        doc: "Send an SMS; result {ok, sids}.",
    },
    ActionSpec {
        name: "fetch",
        version: 1,
        kind: Kind::Fetch(1),
        params: FETCH_PARAMS,
        events: &[],
        doc: "HTTP request; result {ok, status, statusText, headers, body, json}.",
    },
    ActionSpec {
        name: "fetch",
        version: 2,
        kind: Kind::Fetch(2),
        params: FETCH_V2_PARAMS,
        events: &[],
        doc: "HTTP request; result {ok, status, statusText, headers, body, json}.",
    },
    ActionSpec {
        name: "log",
        version: 1,
        kind: Kind::Log,
        params: &[req("message", Ty::Str, "Text written to the run's log.")],
        events: &[],
        doc: "Write to the run's log.",
    },
    ActionSpec {
        name: "javascript",
        version: 1,
        kind: Kind::Javascript,
        params: &[req(
            "code",
            Ty::Str,
            "JavaScript run in the sandbox; assignments to $variables persist.",
        )],
        events: &[],
        doc: "Run JavaScript; its value is the result.",
    },
    ActionSpec {
        name: "wait",
        version: 1,
        kind: Kind::Wait,
        params: &[req("seconds", Ty::Num, "Seconds to pause.")],
        events: &[],
        doc: "Pause the branch.",
    },
];

/// The action `name@vN`, or why it is unknown.
pub(crate) fn lookup(id: &str) -> Result<&'static ActionSpec, String> {
    let Some((name, version)) = id.split_once('@') else {
        return Err(format!(
            "action `{id}` must be written name@vN, e.g. say@v2"
        ));
    };
    let version: Option<u32> = version.strip_prefix('v').and_then(|v| v.parse().ok());
    let Some(version) = version else {
        return Err(format!(
            "action `{id}` must be written name@vN, e.g. say@v2"
        ));
    };
    let mut versions = ACTIONS.iter().filter(|a| a.name == name).peekable();
    if versions.peek().is_none() {
        return Err(format!("unknown action `{name}`"));
    }
    let known: Vec<String> = versions.map(|a| format!("v{}", a.version)).collect();
    ACTIONS
        .iter()
        .find(|a| a.name == name && a.version == version)
        .ok_or_else(|| {
            format!(
                "unknown version v{version} of action `{name}` (known: {})",
                known.join(", ")
            )
        })
}
