//! Our part counts agree with an independent implementation: rusmpp-extra's concatenators
//! (GSM 03.38 unpacked: 160 septets, 7 of them for the header; UCS-2: 140 octets, 6 of them
//! for the header). rusmpp's UCS-2 codec refuses characters outside the BMP, so the UCS-2
//! comparison uses BMP text; surrogate pairs are covered by the unit tests.

#![allow(
    clippy::unwrap_used,
    clippy::too_many_lines,
    reason = "tests: a failed unwrap is a failed test, and a scenario reads best whole"
)]

use dialtone_domain::sms::{Encoding, layout};
use proptest::prelude::*;
use rusmpp_extra::concatenation::owned::{Concatenation, Concatenator};
use rusmpp_extra::encoding::gsm7bit::Gsm7BitUnpacked;
use rusmpp_extra::encoding::ucs2::Ucs2;

fn count(c: Concatenation) -> usize {
    match c {
        Concatenation::Single(_) => 1,
        Concatenation::Concatenated(parts) => parts.len(),
    }
}

const GSM_CHARS: &str =
    "@£$¥èéùìòÇØøÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?¡AZÄÖÑÜ§¿azäöñüà^{}\\[~]|€";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn gsm_part_counts_match(chars in proptest::collection::vec(proptest::sample::select(GSM_CHARS.chars().collect::<Vec<_>>()), 1..700)) {
        let text: String = chars.into_iter().collect();
        let ours = layout(&text, None).unwrap();
        prop_assert_eq!(ours.encoding, Encoding::Gsm);
        let theirs = Gsm7BitUnpacked::new().concatenate(&text, 160, 7).unwrap().0;
        prop_assert_eq!(ours.parts.len(), count(theirs), "{:?}", text);
    }

    #[test]
    fn ucs2_part_counts_match(text in "[a-zжЖ中文€é ]{1,400}") {
        let ours = layout(&text, Some(Encoding::Unicode)).unwrap();
        let theirs = Ucs2::new().concatenate(&text, 140, 6).unwrap().0;
        prop_assert_eq!(ours.parts.len(), count(theirs), "{:?}", text);
    }
}
