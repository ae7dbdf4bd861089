//! Approximate country centres, to pick the closest country that has a number when the
//! requested one has none (recording by phone).

/// `(ISO 3166 alpha-2, latitude, longitude)` of a point near each country's centre.
const CENTRES: &[(&str, f64, f64)] = &[
    ("AE", 24.0, 54.0),
    ("AR", -34.0, -64.0),
    ("AT", 47.5, 14.5),
    ("AU", -25.0, 134.0),
    ("BE", 50.5, 4.5),
    ("BG", 42.7, 25.5),
    ("BR", -10.0, -52.0),
    ("CA", 56.0, -96.0),
    ("CH", 46.8, 8.2),
    ("CL", -33.0, -71.0),
    ("CN", 35.0, 103.0),
    ("CO", 4.0, -73.0),
    ("CY", 35.0, 33.0),
    ("CZ", 49.8, 15.5),
    ("DE", 51.0, 10.0),
    ("DK", 56.0, 10.0),
    ("DZ", 28.0, 3.0),
    ("EE", 58.7, 25.5),
    ("EG", 27.0, 30.0),
    ("ES", 40.0, -4.0),
    ("FI", 64.0, 26.0),
    ("FR", 46.5, 2.5),
    ("GB", 54.0, -2.0),
    ("GR", 39.0, 22.0),
    ("HK", 22.3, 114.2),
    ("HR", 45.1, 15.5),
    ("HU", 47.2, 19.5),
    ("ID", -2.0, 118.0),
    ("IE", 53.2, -8.0),
    ("IL", 31.5, 34.9),
    ("IN", 22.0, 79.0),
    ("IS", 65.0, -18.0),
    ("IT", 42.8, 12.8),
    ("JP", 36.0, 138.0),
    ("KE", 0.0, 38.0),
    ("KR", 36.5, 127.8),
    ("LT", 55.2, 23.9),
    ("LU", 49.8, 6.1),
    ("LV", 56.9, 24.6),
    ("MA", 32.0, -6.0),
    ("MC", 43.7, 7.4),
    ("MT", 35.9, 14.4),
    ("MX", 23.0, -102.0),
    ("MY", 3.0, 102.0),
    ("NG", 9.0, 8.0),
    ("NL", 52.2, 5.5),
    ("NO", 61.0, 9.0),
    ("NZ", -41.0, 174.0),
    ("PE", -10.0, -76.0),
    ("PH", 12.0, 122.0),
    ("PL", 52.0, 19.5),
    ("PT", 39.5, -8.0),
    ("RO", 46.0, 25.0),
    ("RS", 44.0, 21.0),
    ("RU", 60.0, 90.0),
    ("SA", 24.0, 45.0),
    ("SE", 62.0, 15.0),
    ("SG", 1.35, 103.8),
    ("SI", 46.1, 14.8),
    ("SK", 48.7, 19.7),
    ("TH", 15.0, 101.0),
    ("TN", 34.0, 9.0),
    ("TR", 39.0, 35.0),
    ("TW", 23.7, 121.0),
    ("UA", 49.0, 32.0),
    ("US", 39.8, -98.6),
    ("VN", 16.0, 107.0),
    ("ZA", -29.0, 24.0),
];

fn centre(code: &str) -> Option<(f64, f64)> {
    CENTRES
        .iter()
        .find(|(c, _, _)| *c == code)
        .map(|&(_, lat, lon)| (lat, lon))
}

/// Great-circle distance between two points, in kilometres.
fn distance_km(a: (f64, f64), b: (f64, f64)) -> f64 {
    let (lat1, lon1, lat2, lon2) = (
        a.0.to_radians(),
        a.1.to_radians(),
        b.0.to_radians(),
        b.1.to_radians(),
    );
    let h = ((lat2 - lat1) / 2.0).sin().powi(2)
        + lat1.cos() * lat2.cos() * ((lon2 - lon1) / 2.0).sin().powi(2);
    2.0 * 6371.0 * h.sqrt().asin()
}

/// The country of `candidates` closest to `wanted`: `wanted` itself when it is a candidate,
/// else the one whose centre is nearest; when `wanted` (or every candidate) has no known
/// centre, the first candidate in alphabetical order.
pub(crate) fn closest<'a>(wanted: &str, candidates: &'a [String]) -> Option<&'a str> {
    if let Some(same) = candidates.iter().find(|c| *c == wanted) {
        return Some(same);
    }
    let first = candidates.iter().min().map(String::as_str);
    let Some(origin) = centre(wanted) else {
        return first;
    };
    candidates
        .iter()
        .filter_map(|c| centre(c).map(|p| (c.as_str(), distance_km(origin, p))))
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(c, _)| c)
        .or(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(codes: &[&str]) -> Vec<String> {
        codes.iter().map(|c| (*c).to_owned()).collect()
    }

    #[test]
    fn picks_the_nearest() {
        let inventory = list(&["AU", "FR", "GB", "US"]);
        assert_eq!(closest("GB", &inventory), Some("GB"));
        assert_eq!(closest("BE", &inventory), Some("FR"));
        assert_eq!(closest("IE", &inventory), Some("GB"));
        assert_eq!(closest("MX", &inventory), Some("US"));
        assert_eq!(closest("NZ", &inventory), Some("AU"));
        assert_eq!(closest("ZZ", &inventory), Some("AU"));
        assert_eq!(closest("FR", &[]), None);
    }
}
