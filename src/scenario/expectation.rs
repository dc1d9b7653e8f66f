//! A model's declared verdict (`expect`) against what runs observed, compared as sets: a
//! model that declares `violates(["resource_safety"])` and also violates `mutual_exclusion`
//! is not as declared, and says so.

use std::collections::BTreeSet;

use super::schema::Expect;
use crate::check::Property;

impl Expect {
    /// The properties the model declares violated (none for `holds`).
    pub fn declared(&self) -> BTreeSet<Property> {
        match self {
            Expect::Holds => BTreeSet::new(),
            Expect::Violates(v) => v.iter().map(|p| p.0).collect(),
        }
    }

    /// This declaration against the properties observed violated.
    pub fn compare(&self, observed: impl IntoIterator<Item = Property>) -> Comparison {
        Comparison {
            declared: self.declared(),
            observed: observed.into_iter().collect(),
        }
    }
}

/// Declared and observed sets of violated properties.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    pub declared: BTreeSet<Property>,
    pub observed: BTreeSet<Property>,
}

impl Comparison {
    /// Exactly as declared: the same set, no more, no fewer.
    pub fn matches(&self) -> bool {
        self.declared == self.observed
    }

    /// Violated, though not declared.
    pub fn undeclared(&self) -> Vec<Property> {
        self.observed.difference(&self.declared).copied().collect()
    }

    /// Declared, though not violated.
    pub fn unobserved(&self) -> Vec<Property> {
        self.declared.difference(&self.observed).copied().collect()
    }

    /// What differs, for people: `observed also mutual_exclusion, not declared; liveness
    /// declared, not observed` (empty when it matches). `where_` qualifies the second part
    /// (`" in this seed"` for a single run).
    pub fn differences(&self, where_: &str) -> String {
        let mut parts = Vec::new();
        let extra = self.undeclared();
        if !extra.is_empty() {
            parts.push(format!("observed also {}, not declared", names(&extra)));
        }
        let missing = self.unobserved();
        if !missing.is_empty() {
            parts.push(format!(
                "{} declared, not observed{where_}",
                names(&missing)
            ));
        }
        parts.join("; ")
    }

    /// `holds` or `violates(a, b)`, for the observed set.
    pub fn observed_text(&self) -> String {
        if self.observed.is_empty() {
            "holds".into()
        } else {
            let v: Vec<Property> = self.observed.iter().copied().collect();
            format!("violates({})", names(&v))
        }
    }
}

fn names(ps: &[Property]) -> String {
    ps.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::schema::PropName;

    fn violates(ps: &[Property]) -> Expect {
        Expect::Violates(
            ps.iter()
                .map(|p| PropName(*p, crate::scenario::marks::Mark::NONE))
                .collect(),
        )
    }

    #[test]
    fn an_extra_violated_property_is_not_as_declared() {
        let c = violates(&[Property::ResourceSafety])
            .compare([Property::ResourceSafety, Property::MutualExclusion]);
        assert!(!c.matches());
        assert_eq!(
            c.differences(""),
            "observed also mutual_exclusion, not declared"
        );
    }

    #[test]
    fn a_missing_declared_property_is_not_as_declared() {
        let c = violates(&[Property::ResourceSafety, Property::MutualExclusion])
            .compare([Property::MutualExclusion]);
        assert!(!c.matches());
        assert_eq!(
            c.differences(" in this seed"),
            "resource_safety declared, not observed in this seed"
        );
    }

    #[test]
    fn the_same_set_in_any_order_is_as_declared() {
        let c = violates(&[Property::ResourceSafety, Property::MutualExclusion])
            .compare([Property::MutualExclusion, Property::ResourceSafety]);
        assert!(c.matches() && c.differences("").is_empty());
        assert!(Expect::Holds.compare([]).matches());
        assert!(!Expect::Holds.compare([Property::Liveness]).matches());
    }
}
