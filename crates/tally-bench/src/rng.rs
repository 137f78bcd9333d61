//! Randomness with byte-stable output: our own SplitMix64 stream and samplers (uniform,
//! exponential by inversion, normal by Box–Muller, gamma by Marsaglia–Tsang), so that a seed
//! gives the same schedule and workload whatever crate versions are built, plus an MT19937 that
//! seeds and draws like Python's `random.Random`, so stormlog's schedules can be reproduced bit
//! for bit (`--rng stormlog`).

/// SplitMix64's finaliser: a bijective mix of one 64-bit word.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A stable 64-bit hash of a byte string (FNV-1a folded through [`mix64`]); used to name
/// random streams and to derive per-request seeds from request ids.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    mix64(h)
}

/// A source of uniform doubles in [0, 1).
pub trait Uniform {
    /// The next double in [0, 1).
    fn next_f64(&mut self) -> f64;
}

/// SplitMix64 (Steele, Lea and Flood): a 64-bit state advanced by the golden-ratio increment.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A stream starting from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The stream for one purpose (`stream` names it) of one seed.
    pub fn for_stream(seed: u64, stream: &str) -> Self {
        Self::new(seed ^ hash_bytes(stream.as_bytes()))
    }

    /// The next 64-bit word.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.state)
    }
}

impl Uniform for SplitMix64 {
    fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// An exponential draw with rate `lambda` by inversion: −ln(1 − U)/λ (Python's `expovariate`).
pub fn exponential(rng: &mut impl Uniform, lambda: f64) -> f64 {
    -(1.0 - rng.next_f64()).ln() / lambda
}

/// A standard normal draw (Box–Muller, one of the pair; U1 kept away from 0).
pub fn standard_normal(rng: &mut impl Uniform) -> f64 {
    let u1 = 1.0 - rng.next_f64();
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A Gamma(shape, scale) draw by Marsaglia and Tsang, with the U^(1/shape) boost for shape < 1.
pub fn gamma(rng: &mut impl Uniform, shape: f64, scale: f64) -> f64 {
    if shape < 1.0 {
        let boost = (1.0 - rng.next_f64()).powf(1.0 / shape);
        return gamma(rng, shape + 1.0, scale) * boost;
    }
    let d = shape - 1.0 / 3.0;
    let c = 1.0 / (9.0 * d).sqrt();
    loop {
        let x = standard_normal(rng);
        let v = 1.0 + c * x;
        if v <= 0.0 {
            continue;
        }
        let v = v * v * v;
        let u = rng.next_f64();
        if u < 1.0 - 0.0331 * x * x * x * x || u.ln() < 0.5 * x * x + d * (1.0 - v + v.ln()) {
            return d * v * scale;
        }
    }
}

/// MT19937 seeded as CPython's `random.Random(seed)` seeds it for a non-negative integer seed
/// (`init_by_array` over the seed's 32-bit words, least significant first), drawing doubles as
/// `random.random()` does (53 bits from two words).
#[derive(Clone)]
pub struct PythonMt {
    state: Box<[u32; 624]>,
    index: usize,
}

impl std::fmt::Debug for PythonMt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PythonMt")
            .field("index", &self.index)
            .finish()
    }
}

impl PythonMt {
    /// Seeded like `random.Random(seed)`.
    pub fn new(seed: u64) -> Self {
        let mut key = vec![seed as u32];
        if seed >> 32 != 0 {
            key.push((seed >> 32) as u32);
        }
        let mut mt = Self::init_genrand(19_650_218);
        let n = 624usize;
        let (mut i, mut j) = (1usize, 0usize);
        let state = &mut mt.state;
        for _ in 0..n.max(key.len()) {
            let prev = state[i - 1] ^ (state[i - 1] >> 30);
            state[i] = (state[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= n {
                state[0] = state[n - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..n - 1 {
            let prev = state[i - 1] ^ (state[i - 1] >> 30);
            state[i] = (state[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= n {
                state[0] = state[n - 1];
                i = 1;
            }
        }
        state[0] = 0x8000_0000;
        mt.index = n;
        mt
    }

    fn init_genrand(seed: u32) -> Self {
        let mut state = Box::new([0u32; 624]);
        state[0] = seed;
        for i in 1..624 {
            state[i] = 1_812_433_253u32
                .wrapping_mul(state[i - 1] ^ (state[i - 1] >> 30))
                .wrapping_add(i as u32);
        }
        Self { state, index: 624 }
    }

    fn next_u32(&mut self) -> u32 {
        if self.index >= 624 {
            self.twist();
        }
        let mut y = self.state[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    fn twist(&mut self) {
        for i in 0..624 {
            let y = (self.state[i] & 0x8000_0000) | (self.state[(i + 1) % 624] & 0x7fff_ffff);
            let mut next = self.state[(i + 397) % 624] ^ (y >> 1);
            if y & 1 != 0 {
                next ^= 0x9908_b0df;
            }
            self.state[i] = next;
        }
        self.index = 0;
    }
}

impl Uniform for PythonMt {
    fn next_f64(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_mt_matches_cpython_expovariate() {
        // python3 -c "import random; r=random.Random(0); print([r.expovariate(10) for _ in range(3)])"
        let mut mt = PythonMt::new(0);
        let draws: Vec<f64> = (0..3).map(|_| exponential(&mut mt, 10.0)).collect();
        assert_eq!(
            draws,
            [
                0.18606071110652234,
                0.14186291529717618,
                0.05457131455415928
            ]
        );
    }

    #[test]
    fn splitmix_is_stable() {
        // The first outputs of SplitMix64 seeded with 0 (the reference implementation's).
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(rng.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn gamma_and_exponential_have_their_means() {
        let mut rng = SplitMix64::new(7);
        let n = 200_000;
        let mean_exp: f64 = (0..n).map(|_| exponential(&mut rng, 4.0)).sum::<f64>() / n as f64;
        assert!((mean_exp - 0.25).abs() < 0.005, "{mean_exp}");
        for shape in [0.5, 1.0, 4.0] {
            let draws: Vec<f64> = (0..n).map(|_| gamma(&mut rng, shape, 2.0)).collect();
            let mean = draws.iter().sum::<f64>() / n as f64;
            let var = draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
            assert!(
                (mean - 2.0 * shape).abs() < 0.03 * 2.0 * shape,
                "{shape}: {mean}"
            );
            assert!(
                (var - 4.0 * shape).abs() < 0.06 * 4.0 * shape,
                "{shape}: {var}"
            );
        }
    }
}
