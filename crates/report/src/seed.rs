//! One master seed feeding independent child random streams, and the seed of each run of
//! numa_test.
//!
//! Every source of randomness (tick phases, a workload's start jitter, ...) asks for its own
//! stream by a fixed name and index, so adding a new source never shifts the numbers another
//! source sees, and the same seed always gives the same run. The simulator draws everything
//! from a [`SeedTree`]; the benchmark uses [`run_seed`] so that its run `rep` of N has the
//! seed the simulator's has.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

/// The master seed of one simulation run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedTree {
    master: u64,
}

impl SeedTree {
    pub fn new(master: u64) -> Self {
        Self { master }
    }

    /// A child seed tree, e.g. one per repetition of an experiment.
    pub fn child(&self, name: &str, index: u64) -> SeedTree {
        SeedTree {
            master: self.derive(name, index),
        }
    }

    /// The random stream named `name`, number `index`.
    pub fn stream(&self, name: &str, index: u64) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.derive(name, index))
    }

    fn derive(&self, name: &str, index: u64) -> u64 {
        // FNV-1a over the name, then splitmix64 finalisation with the master and index.
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        splitmix64(h ^ splitmix64(self.master ^ splitmix64(index)))
    }
}

/// The seed of repetition `rep` with `tasks` tasks: the same for every scheduler, so that
/// schedulers are compared on the same draws.
pub fn run_seed(seed: u64, tasks: u32, rep: u32) -> u64 {
    use rand::RngCore;
    let t = SeedTree::new(seed)
        .child("tasks", u64::from(tasks))
        .child("rep", u64::from(rep));
    t.stream("run", 0).next_u64()
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::Rng;

    #[test]
    fn streams_are_stable_and_independent() {
        let t = SeedTree::new(42);
        let a: u64 = t.stream("ticks", 0).r#gen();
        let b: u64 = t.stream("ticks", 0).r#gen();
        let c: u64 = t.stream("ticks", 1).r#gen();
        let d: u64 = SeedTree::new(43).stream("ticks", 0).r#gen();
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert_ne!(a, d);
    }
}
