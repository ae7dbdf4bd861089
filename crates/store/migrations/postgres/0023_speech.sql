-- Text-to-speech audio files keep their text and voice; recordings keep the transcription
-- asked for them: its language, where it stands, why it failed, when it is next due (a
-- lease while a worker transcribes it), how often it was claimed, and the run and fiber
-- whose `ready` event waits for it. A call keeps the recording of the whole call a network
-- delivered apart from the audio a voicemail takes.
ALTER TABLE audio_files ADD COLUMN voice TEXT;
ALTER TABLE audio_files ADD COLUMN text TEXT;
ALTER TABLE recordings ADD COLUMN transcript_status TEXT;
ALTER TABLE recordings ADD COLUMN transcript_language TEXT;
ALTER TABLE recordings ADD COLUMN transcript_error TEXT;
ALTER TABLE recordings ADD COLUMN transcript_next_at BIGINT;
ALTER TABLE recordings ADD COLUMN transcript_attempts BIGINT NOT NULL DEFAULT 0;
ALTER TABLE recordings ADD COLUMN transcript_run BIGINT;
ALTER TABLE recordings ADD COLUMN transcript_fiber BIGINT;
CREATE INDEX recordings_transcripts_due ON recordings(transcript_next_at) WHERE transcript_next_at IS NOT NULL;
CREATE INDEX recordings_transcripts_of_account ON recordings(account_id, transcript_next_at) WHERE transcript_next_at IS NOT NULL;
ALTER TABLE calls ADD COLUMN call_audio BYTEA;
