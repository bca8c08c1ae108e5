//! Scheduler specs on the command line: `name` or `name:key=value,key=value`.

use super::error::{OptionError, SpecError};
use crate::time::{MS, Ns, US};
use std::fmt;

/// A scheduler name with its option overrides, as given by the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedSpec {
    pub name: String,
    pub options: Vec<(String, String)>,
}

impl SchedSpec {
    /// Parse `name[:key=value,...]`.
    pub fn parse(s: &str) -> Result<SchedSpec, SpecError> {
        let (name, rest) = match s.split_once(':') {
            Some((n, r)) => (n.trim(), Some(r)),
            None => (s.trim(), None),
        };
        if name.is_empty() {
            return Err(SpecError::EmptyName { spec: s.into() });
        }
        let mut options = Vec::new();
        for kv in rest
            .unwrap_or("")
            .split(',')
            .filter(|x| !x.trim().is_empty())
        {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(SpecError::NotKeyValue {
                    item: kv.into(),
                    spec: s.into(),
                });
            };
            options.push((k.trim().to_string(), v.trim().to_string()));
        }
        Ok(SchedSpec {
            name: name.to_string(),
            options,
        })
    }

    /// Parse a comma list of specs where options use `:` after each name; specs are
    /// separated by `;` or by `,` when no options are given (`o1,node-affine-static`).
    pub fn parse_list(s: &str) -> Result<Vec<SchedSpec>, SpecError> {
        if s.contains(';') || !s.contains(':') {
            let sep = if s.contains(';') { ';' } else { ',' };
            return s
                .split(sep)
                .filter(|x| !x.trim().is_empty())
                .map(SchedSpec::parse)
                .collect();
        }
        // `a,b:k=v,l=w` – a name starts at an item without '=' in it.
        let mut specs: Vec<String> = Vec::new();
        for item in s.split(',') {
            if item.contains('=') && !item.contains(':') {
                match specs.last_mut() {
                    Some(last) => {
                        last.push(',');
                        last.push_str(item);
                    }
                    None => {
                        return Err(SpecError::ListStartsWithOption { list: s.into() });
                    }
                }
            } else {
                specs.push(item.to_string());
            }
        }
        specs.iter().map(|x| SchedSpec::parse(x)).collect()
    }
}

impl fmt::Display for SchedSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.options.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

/// Options being consumed by a scheduler's constructor; unknown keys are an error.
pub struct SchedOptions {
    sched: String,
    given: Vec<(String, String, bool)>,
    known: Vec<&'static str>,
}

impl SchedOptions {
    pub fn new(sched: &str, given: &[(String, String)]) -> Self {
        SchedOptions {
            sched: sched.to_string(),
            given: given
                .iter()
                .map(|(k, v)| (k.clone(), v.clone(), false))
                .collect(),
            known: Vec::new(),
        }
    }

    fn take(&mut self, key: &'static str) -> Option<String> {
        self.known.push(key);
        // The last occurrence wins; every occurrence counts as used.
        let mut value = None;
        for (_, v, used) in self.given.iter_mut().filter(|(k, _, _)| k == key) {
            *used = true;
            value = Some(v.clone());
        }
        value
    }

    /// A duration option in ms (`200`, `200ms`, `1.5ms`, `500us`, `1s`).
    pub fn duration(&mut self, key: &'static str, default: Ns) -> Result<Ns, OptionError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        parse_duration(&v).ok_or_else(|| self.bad(key, v, "a duration (e.g. 200ms, 1s, 500us)"))
    }

    /// A duration option that may also be `off` (None).
    pub fn duration_or_off(
        &mut self,
        key: &'static str,
        default: Option<Ns>,
    ) -> Result<Option<Ns>, OptionError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        if v == "off" {
            return Ok(None);
        }
        parse_duration(&v)
            .map(Some)
            .ok_or_else(|| self.bad(key, v, "a duration (e.g. 500ms, 1s) or `off`"))
    }

    pub fn uint(&mut self, key: &'static str, default: u64) -> Result<u64, OptionError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.parse().map_err(|_| self.bad(key, v, "a whole number"))
    }

    /// A word option (the caller checks it against its choices).
    pub fn string(&mut self, key: &'static str, default: &str) -> String {
        self.take(key).unwrap_or_else(|| default.to_string())
    }

    /// One of a fixed set of words; an error lists the valid ones.
    pub fn choice(
        &mut self,
        key: &'static str,
        default: &'static str,
        choices: &[&'static str],
    ) -> Result<&'static str, OptionError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        match choices.iter().find(|&&c| c == v) {
            Some(&c) => Ok(c),
            None => Err(self.bad(key, v, &format!("one of {}", choices.join(", ")))),
        }
    }

    pub fn flag(&mut self, key: &'static str, default: bool) -> Result<bool, OptionError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        match v.as_str() {
            "on" | "true" | "1" | "yes" => Ok(true),
            "off" | "false" | "0" | "no" => Ok(false),
            _ => Err(self.bad(key, v, "on/off")),
        }
    }

    /// Error for any option nobody asked for.
    pub fn finish(self) -> Result<(), OptionError> {
        if let Some((k, _, _)) = self.given.iter().find(|(_, _, used)| !used) {
            return Err(OptionError::Unknown {
                scheduler: self.sched,
                key: k.clone(),
                valid: self.known,
            });
        }
        Ok(())
    }

    /// The names of the options asked for so far, in the order asked.
    pub fn known(&self) -> &[&'static str] {
        &self.known
    }

    fn bad(&self, key: &str, value: String, expected: &str) -> OptionError {
        OptionError::BadValue {
            scheduler: self.sched.clone(),
            key: key.into(),
            value,
            expected: expected.into(),
        }
    }
}

/// Parse `200`, `200ms`, `1.5ms`, `500us`, `2s`, `0` (bare numbers are ms).
pub fn parse_duration(v: &str) -> Option<Ns> {
    let v = v.trim();
    let (num, unit) = if let Some(n) = v.strip_suffix("ms") {
        (n, MS)
    } else if let Some(n) = v.strip_suffix("us") {
        (n, US)
    } else if let Some(n) = v.strip_suffix("ns") {
        (n, 1)
    } else if let Some(n) = v.strip_suffix('s') {
        (n, 1_000_000_000)
    } else {
        (v, MS)
    };
    let x: f64 = num.trim().parse().ok()?;
    (0.0..1e6)
        .contains(&x)
        .then(|| (x * unit as f64).round() as Ns)
}

/// Format a duration option for reports.
pub fn fmt_duration(ns: Ns) -> String {
    if ns % MS == 0 {
        format!("{}ms", ns / MS)
    } else {
        format!("{}us", ns / US)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs() {
        let s = SchedSpec::parse("pool:pool_delay=0,initial_lb=off").expect("spec");
        assert_eq!(s.name, "pool");
        assert_eq!(s.options.len(), 2);
        assert_eq!(s.to_string(), "pool:pool_delay=0,initial_lb=off");
        let l = SchedSpec::parse_list("o1,node-affine-static,node-affine-dynamic").expect("list");
        assert_eq!(l.len(), 3);
        let l = SchedSpec::parse_list("o1,node-affine-static:home_bonus=2,pool_delay_busy=0")
            .expect("list");
        assert_eq!(l.len(), 2);
        assert_eq!(l[1].options.len(), 2);
        assert!(SchedSpec::parse("o1:foo").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("200"), Some(200 * MS));
        assert_eq!(parse_duration("1.5ms"), Some(1_500_000));
        assert_eq!(parse_duration("500us"), Some(500_000));
        assert_eq!(parse_duration("2s"), Some(2_000_000_000));
        assert_eq!(parse_duration("-1"), None);
        assert_eq!(parse_duration("fast"), None);
    }

    #[test]
    fn unknown_option_named() {
        let given = vec![("bogus".to_string(), "1".to_string())];
        let mut o = SchedOptions::new("o1", &given);
        let _ = o.duration("busy_interval", MS);
        let e = o.finish().unwrap_err().to_string();
        assert!(e.contains("bogus") && e.contains("busy_interval"), "{e}");
    }
}
