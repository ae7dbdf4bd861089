//! Unauthenticated operations endpoints: liveness, readiness and Prometheus metrics.

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::state::AppState;

/// `/livez`, `/readyz`, `/metrics`.
pub(crate) fn router() -> Router<AppState> {
    Router::new()
        .route("/livez", get(livez))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
}

async fn livez() -> impl IntoResponse {
    axum::Json(serde_json::json!({ "status": "ok" }))
}

async fn readyz(State(state): State<AppState>) -> impl IntoResponse {
    if state.store.is_ready().await {
        (
            StatusCode::OK,
            axum::Json(serde_json::json!({ "status": "ok" })),
        )
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            axum::Json(serde_json::json!({ "status": "database unreachable" })),
        )
    }
}

async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        with_voice(&state, state.metrics.render()),
    )
}

/// The metrics of the voice side (SIP calls, RTP packets, speech) added to `rendered`,
/// before its `# EOF`.
fn with_voice(state: &AppState, rendered: String) -> String {
    use std::fmt::Write;
    let mut out = rendered
        .strip_suffix("# EOF\n")
        .map(str::to_owned)
        .unwrap_or(rendered);
    let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
        let sample = if kind == "counter" {
            format!("{name}_total")
        } else {
            name.to_owned()
        };
        let _ = write!(
            out,
            "# HELP {name} {help}\n# TYPE {name} {kind}\n{sample} {value}\n"
        );
    };
    sip_metrics(state, &mut metric);
    speech_metrics(state, &mut metric);
    out.push_str("# EOF\n");
    out
}

/// Writes one metric: name, kind (`counter` or `gauge`), help, value.
type Metric<'a> = dyn FnMut(&str, &str, &str, u64) + 'a;

/// The SIP node's calls and RTP counters, when it runs.
fn sip_metrics(state: &AppState, metric: &mut Metric<'_>) {
    if let Some(node) = state.networks.sip() {
        let m = node.media();
        metric(
            "dialtone_sip_calls",
            "gauge",
            "SIP calls carried now.",
            node.calls() as u64,
        );
        metric(
            "dialtone_rtp_legs",
            "gauge",
            "Call legs with media now.",
            m.legs,
        );
        metric(
            "dialtone_rtp_packets_sent",
            "counter",
            "RTP packets sent.",
            m.sent,
        );
        metric(
            "dialtone_rtp_packets_sent_late",
            "counter",
            "RTP packets sent 10 ms or more after their turn.",
            m.sent_late,
        );
        metric(
            "dialtone_rtp_packets_received",
            "counter",
            "RTP packets received.",
            m.received,
        );
        metric(
            "dialtone_rtp_packets_lost",
            "counter",
            "RTP frames with no packet at their turn.",
            m.lost,
        );
        metric(
            "dialtone_rtp_packets_late",
            "counter",
            "RTP packets that arrived after their turn.",
            m.late,
        );
    }
}

/// The speech engines' and the transcriber's counters.
fn speech_metrics(state: &AppState, metric: &mut Metric<'_>) {
    let (hits, made) = state.speech.counts();
    metric(
        "dialtone_speech_cache_hits",
        "counter",
        "Prompts spoken from the cache.",
        hits,
    );
    metric(
        "dialtone_speech_syntheses",
        "counter",
        "Prompts synthesized.",
        made,
    );
    for (engine, work) in [
        ("espeak", &state.speech.by_espeak),
        ("neural", &state.speech.by_neural),
    ] {
        let (took, audio, _) = work.read();
        metric(
            &format!("dialtone_speech_{engine}_synthesis_milliseconds"),
            "counter",
            "Time spent synthesizing speech with this engine.",
            took,
        );
        metric(
            &format!("dialtone_speech_{engine}_audio_milliseconds"),
            "counter",
            "Speech this engine synthesized.",
            audio,
        );
    }
    let (took, audio, count) = state.speech.transcribed.read();
    metric(
        "dialtone_transcriptions",
        "counter",
        "Recordings transcribed.",
        count,
    );
    metric(
        "dialtone_transcription_milliseconds",
        "counter",
        "Time spent transcribing (the transcriber's start and model load included).",
        took,
    );
    metric(
        "dialtone_transcribed_audio_milliseconds",
        "counter",
        "Audio transcribed.",
        audio,
    );
}
