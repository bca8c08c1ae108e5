//! Range checks shared by the spec's sections: square matrices, the SLIT's rules, sizes in
//! GiB, positive numbers, powers of two.

use super::*;

/// A per-node matrix `key` has `n` rows of `n` entries.
pub(super) fn check_square<T>(o: &str, key: &str, m: &[Vec<T>], n: usize) -> Result<(), TopoError> {
    if m.len() != n {
        return Err(TopoError::impossible(
            o,
            key,
            format!("has {} rows, expected {n} (one per node)", m.len()),
        ));
    }
    for (a, row) in m.iter().enumerate() {
        if row.len() != n {
            return Err(TopoError::impossible(
                o,
                format!("{key}[{a}]"),
                format!("has {} entries, expected {n}", row.len()),
            ));
        }
    }
    Ok(())
}

pub(super) fn check_distance_matrix(o: &str, m: &[Vec<u32>], n: usize) -> Result<(), TopoError> {
    check_square(o, "distance", m, n)?;
    for (a, row) in m.iter().enumerate() {
        for (b, &d) in row.iter().enumerate() {
            if a == b && d != LOCAL_DISTANCE {
                return Err(TopoError::impossible(
                    o,
                    format!("distance[{a}][{a}]"),
                    format!("is {d}, must be {LOCAL_DISTANCE} (a node's distance to itself)"),
                ));
            }
            if a != b && !(LOCAL_DISTANCE + 1..=MAX_DISTANCE).contains(&d) {
                return Err(TopoError::impossible(
                    o,
                    format!("distance[{a}][{b}]"),
                    format!(
                        "is {d}, must be {}..={MAX_DISTANCE} (remote is farther than local)",
                        LOCAL_DISTANCE + 1
                    ),
                ));
            }
            if d != m[b][a] {
                return Err(TopoError::impossible(
                    o,
                    format!("distance[{a}][{b}]"),
                    format!(
                        "is {d} but distance[{b}][{a}] is {}: must be symmetric",
                        m[b][a]
                    ),
                ));
            }
        }
    }
    let mut remote: Vec<u32> = m
        .iter()
        .flatten()
        .copied()
        .filter(|&d| d != LOCAL_DISTANCE)
        .collect();
    remote.sort_unstable();
    remote.dedup();
    if remote.len() > MAX_REMOTE_DISTANCES {
        return Err(TopoError::impossible(
            o,
            "distance",
            format!(
                "has {} distinct remote distances, more than the limit of {MAX_REMOTE_DISTANCES} (each is a scheduling-domain level, with a group list per CPU)",
                remote.len()
            ),
        ));
    }
    Ok(())
}

/// Bytes of a size given in GiB: positive, at least one byte, representable.
pub(super) fn gib_to_bytes(o: &str, field: &str, gib: f64) -> Result<u64, TopoError> {
    let bytes = gib * GIB;
    if gib.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64 {
        Ok(bytes.round() as u64)
    } else {
        Err(TopoError::impossible(
            o,
            field,
            format!("is {gib}, must be a positive finite size"),
        ))
    }
}

pub(super) fn positive(o: &str, field: &str, v: f64) -> Result<(), TopoError> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(TopoError::impossible(
            o,
            field,
            format!("is {v}, must be a positive finite number"),
        ))
    }
}

pub(super) fn power_of_two(o: &str, field: &str, v: u64) -> Result<(), TopoError> {
    if v.is_power_of_two() {
        Ok(())
    } else {
        Err(TopoError::impossible(
            o,
            field,
            format!("is {v}, must be a power of two"),
        ))
    }
}
