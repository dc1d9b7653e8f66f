//! `explore --faults 1 --thresholds`: where one fault's magnitude flips the verdict.
//!
//! - On a model whose edge can be computed by hand (tests/models/threshold-pause-by-hand.ron:
//!   fixed latency, hold, retry), every flip is the textbook inequality
//!   `pause ≥ ttl − (start − t_set)` with Redis's ms rounding of the expiry and the other
//!   client's retry, to 1 µs.
//! - The two replay commands of a flip, pasted into a shell, exit 0 and 1 and differ only in
//!   the magnitude, by at most 1 µs.
//! - Between two flips of a start (and below the first, above the last) the verdict is
//!   constant: magnitudes drawn at random, run from time 0, agree with the piece they fall in.
//!   CI draws `CI_DRAWS` per model; `DISTLOCK_THRESHOLD_DRAWS=N` draws N per model, from the
//!   stream `DISTLOCK_THRESHOLD_SEED` (default 29; docs/explore.md gives the figures for
//!   17,000 draws a model).
//! - A fault opened anywhere inside a piece of time runs as the piece's representative with
//!   its magnitude moved by the shift (a window's end is what counts), with `--every-offset`
//!   so that servers' pieces are bounded too; with more draws than CI's, also on
//!   failover-lost-lock's master (1.2 M threshold runs, about 10 minutes).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use distlock_sim::explore::systematic::ExploreConfig;
use distlock_sim::explore::threshold::{self, Piece, ThresholdReport, Unit};
use distlock_sim::history::Observation;
use distlock_sim::rng::Prng;
use distlock_sim::scenario::{self, Scenario};

const CI_DRAWS: u64 = 300;

fn path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn load(rel: &str) -> (Scenario, String) {
    let p = path(rel);
    let sc = scenario::load(&p).unwrap_or_else(|e| panic!("{e}"));
    let text = std::fs::read_to_string(&p).unwrap();
    (sc, text)
}

fn config() -> ExploreConfig {
    ExploreConfig {
        faults: 1,
        budget_runs: threshold::DEFAULT_BUDGET_RUNS,
        ..ExploreConfig::default()
    }
}

fn thresholds(rel: &str) -> (Scenario, ThresholdReport) {
    thresholds_with(rel, &config())
}

fn thresholds_with(rel: &str, cfg: &ExploreConfig) -> (Scenario, ThresholdReport) {
    let (sc, text) = load(rel);
    let r = threshold::thresholds(&sc, &text, cfg, "distlock-sim")
        .unwrap_or_else(|e| panic!("{rel}: {e}"));
    assert!(!r.inconclusive(), "{rel}: thresholds cut short");
    (sc, r)
}

#[test]
fn every_flip_of_the_hand_model_is_its_inequality_to_1us_and_the_textbook_one_late_by_rounding_and_retry()
 {
    let (sc, r) = thresholds("tests/models/threshold-pause-by-hand.ron");
    // h's one acquisition in the unfaulted run: the reply's arrival (t_ack), its key set one
    // latency before.
    let (_, w) = distlock_sim::explore::run_world(&sc, 0, distlock_sim::sim::TraceMode::Off);
    let names = w.names();
    let acks: Vec<u64> = w
        .history
        .records
        .iter()
        .filter(|rec| {
            matches!(rec.obs, Observation::Acquired { .. }) && names[rec.proc.index()] == "h"
        })
        .map(|rec| rec.at.0)
        .collect();
    assert_eq!(acks.len(), 1, "h locks once");
    let (lat, retry, ttl, hold) = (100_000i64, 500_000i64, 2_000_000_000i64, 500_000_000i64);
    let ms = 1_000_000i64;
    let t_ack = acks[0] as i64;
    let t_set = t_ack - lat;
    // Redis stores the expiry in ms of its clock (`PX` added to `mstime()`) and expires a key
    // once its ms clock is past it: the key is gone from the first whole ms after
    // t_set + ttl, rounded down to the ms.
    let t_exp = (t_set / ms) * ms + ttl + ms;
    // w's SETs arrive every retry + 2 × latency from `lat` on; the first at or after t_exp
    // takes the key, and w holds from its reply.
    let period = retry + 2 * lat;
    let k = (t_exp - lat + period - 1) / period;
    let w_ack = lat + k * period + lat;
    assert!(r.thresholds.len() >= 3, "flips: {:?}", r.thresholds);
    // Inside the piece of time between h's reply and its release, a pause opened anywhere
    // meets the same event first and its flip moves with its start: it breaks the lock iff
    // it ends at or after w's acquisition. Twenty starts drawn in the piece, each run from
    // time 0 at the edge and 1 µs short of it.
    let template = r
        .thresholds
        .iter()
        .find(|t| t.point == "acquired")
        .expect("a flip at the acquisition")
        .violates
        .clone();
    let mut rng = Prng::new(29, 1);
    let mut runs = Vec::new();
    for _ in 0..20 {
        let s = t_ack + 1 + rng.range_i64(0, hold - 2);
        for d in [w_ack - s, w_ack - s - 1_000] {
            let mut f = template.clone();
            f[0].at = distlock_sim::time::SimTime(s as u64);
            f[0].duration_ns = Some(d as u64);
            runs.push(f);
        }
    }
    let v = threshold::verdicts_from_zero(&sc, &config(), &runs).unwrap();
    for (pair, f) in v.chunks(2).zip(runs.chunks(2)) {
        assert!(
            matches!(pair[0], Ok(Some(_))),
            "{:?}: at the edge it violates",
            f[0]
        );
        assert_eq!(pair[1], Ok(None), "{:?}: 1 µs short of it, it holds", f[1]);
    }
    for t in &r.thresholds {
        assert_eq!((t.kind.as_str(), t.target.as_str()), ("pause", "h"));
        assert!(t.violates_above(), "{t:?}");
        let s = t.at.0 as i64;
        // Paused before its reply arrives, h's hold starts when it wakes; after, its hold ran
        // out asleep and it releases as it wakes. It breaks mutual exclusion iff it still
        // believes when w acquires.
        let by_hand = if s < t_ack {
            w_ack - hold - s
        } else {
            w_ack - s
        };
        let textbook = if s < t_ack {
            ttl - hold - (s - t_set)
        } else {
            ttl - (s - t_set)
        };
        assert!(
            (0..1_000).contains(&(t.boundary() - by_hand)),
            "pause of h from {s} ns ({}): flips at {} ns, by hand {by_hand} ns",
            t.point,
            t.boundary()
        );
        // The textbook misses two things, both ≥ 0: the key outlives its TTL by up to 1 ms
        // (the rounding above) and w takes it up to one period after that.
        assert!(
            (0..=ms + period).contains(&(t.boundary() - textbook)),
            "pause of h from {s} ns: flips at {} ns, textbook {textbook} ns",
            t.boundary()
        );
        eprintln!(
            "pause of h from {s} ns ({}): flips at {} ns; by hand {by_hand} ns; textbook ttl - elapsed {textbook} ns (+{:.3} ms)",
            t.point,
            t.boundary(),
            (t.boundary() - textbook) as f64 / 1e6
        );
    }
}

/// The hand models' fixed numbers (tests/models/threshold-*-by-hand.ron) and the instants
/// they give: h's key set (t_set), h's reply (t_ack), the first ms the key is gone by the
/// server's clock (`exp_local`: Redis stores `mstime() + PX` and expires a key once its ms
/// clock is past it), and the instants w's SETs arrive at the server (every retry +
/// 2 × latency from the first latency on).
struct ByHand {
    lat: i64,
    period: i64,
    t_set: i64,
    t_ack: i64,
    exp_local: i64,
}

fn by_hand(sc: &Scenario, ttl: i64) -> ByHand {
    let (_, w) = distlock_sim::explore::run_world(sc, 0, distlock_sim::sim::TraceMode::Off);
    let names = w.names();
    let acks: Vec<i64> = w
        .history
        .records
        .iter()
        .filter(|rec| {
            matches!(rec.obs, Observation::Acquired { .. }) && names[rec.proc.index()] == "h"
        })
        .map(|rec| rec.at.0 as i64)
        .collect();
    assert_eq!(acks.len(), 1, "h locks once");
    let (lat, retry, ms) = (100_000i64, 500_000i64, 1_000_000i64);
    let t_ack = acks[0];
    let t_set = t_ack - lat;
    ByHand {
        lat,
        period: retry + 2 * lat,
        t_set,
        t_ack,
        exp_local: (t_set / ms) * ms + ttl + ms,
    }
}

#[test]
fn a_server_drift_flips_at_the_hand_models_rate_to_1ppm() {
    let (sc, r) = thresholds("tests/models/threshold-drift-by-hand.ron");
    let (ttl, hold) = (2_000_000_000i64, 1_500_000_000i64);
    let h = by_hand(&sc, ttl);
    // h releases at t_ack + hold; the last SET of w that can still take the key before that
    // arrives at `last` (its reply, one latency later, must come no later than the release).
    let release = h.t_ack + hold;
    let k = (release - 2 * h.lat) / h.period;
    let last = h.lat + k * h.period;
    let flips: Vec<_> = r
        .thresholds
        .iter()
        .filter(|t| t.at.0 as i64 > h.t_set)
        .collect();
    assert!(flips.len() >= 2, "flips after the SET: {:?}", r.thresholds);
    for t in flips {
        assert_eq!(
            (t.kind.as_str(), t.target.as_str()),
            ("drift fast", "redis")
        );
        assert_eq!(t.unit, Unit::Drift);
        assert!(t.violates_above(), "{t:?}");
        // Opened at s after the key was stored, a rate of r ppm brings the server's clock from
        // s to exp_local by s + (exp_local − s) / (1 + r/10^6): the key is gone when `last`
        // arrives iff that is ≤ last. The smallest whole r:
        let s = t.at.0 as i64;
        let (num, den) = (((h.exp_local - s) as i128) * 1_000_000, (last - s) as i128);
        let hand = ((num + den - 1) / den - 1_000_000) as i64;
        assert!(
            (t.boundary() - hand).abs() <= 1,
            "drift of redis from {s} ns ({}): flips at {}ppm, by hand {hand}ppm",
            t.point,
            t.boundary()
        );
        eprintln!(
            "drift of redis from {s} ns ({}): flips at {:+}ppm; by hand {hand:+}ppm",
            t.point,
            t.boundary()
        );
    }
}

#[test]
fn a_late_reply_flips_at_the_hand_models_extra_latency_to_1us_as_a_pause_before_it_does() {
    let (sc, r) = thresholds("tests/models/threshold-latency-by-hand.ron");
    let (ttl, hold) = (2_000_000_000i64, 500_000_000i64);
    let h = by_hand(&sc, ttl);
    // w takes the key with the first SET arriving at or after exp_local, and holds from its
    // reply.
    let k = (h.exp_local - h.lat + h.period - 1) / h.period;
    let w_ack = h.lat + k * h.period + h.lat;
    assert!(!r.thresholds.is_empty(), "no flip");
    for t in &r.thresholds {
        assert_eq!(
            (t.kind.as_str(), t.target.as_str()),
            ("latency spike", "[redis] -> [h]")
        );
        assert_eq!(t.unit, Unit::Latency);
        assert!(t.violates_above(), "{t:?}");
        // Opened before the server sent its reply: h holds from t_ack + e and still does
        // when w acquires iff t_ack + e + hold ≥ w_ack — the pause-before-the-reply edge of
        // threshold-pause-by-hand with the start at the server's send.
        assert!(
            t.at.0 as i64 <= h.t_set,
            "{t:?}: a spike opened after the reply left"
        );
        let hand = w_ack - hold - h.t_ack;
        assert!(
            (0..1_000).contains(&(t.boundary() - hand)),
            "spike from {} ns ({}): flips at {} ns, by hand {hand} ns",
            t.at.0,
            t.point,
            t.boundary()
        );
        eprintln!(
            "spike from {} ns ({}): flips at {} ns; by hand {hand} ns",
            t.at.0,
            t.point,
            t.boundary()
        );
    }
}

fn sh(cmd: &str) -> i32 {
    // The command as printed, its first word (the program as it was started) this build's.
    let bin = env!("CARGO_BIN_EXE_distlock-sim");
    let (_, rest) = cmd.split_once(' ').unwrap();
    let cmd = format!("'{bin}' {rest}");
    let out = Command::new("sh")
        .arg("-c")
        .arg(&cmd)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    out.status.code().unwrap_or(-1)
}

#[test]
fn a_flips_two_replay_commands_exit_0_and_1_as_pasted_and_differ_only_in_the_magnitude() {
    for rel in [
        "tests/models/threshold-pause-by-hand.ron",
        "models/single-px-del-pause.ron",
        "models/single-clock-step-expires-locks.ron",
        "models/failover-lost-lock.ron",
    ] {
        let bin = env!("CARGO_BIN_EXE_distlock-sim");
        let out = Command::new(bin)
            .args(["explore", rel, "--faults", "1", "--thresholds", "--json"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{rel}: a flip is a violation");
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .filter(|l| l.starts_with("{\"threshold\""))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(!lines.is_empty(), "{rel}: no flip");
        // The first and the last flip: two runs of the program each.
        for l in [&lines[0], &lines[lines.len() - 1]] {
            let t = &l["threshold"];
            let holds = t["replay_holds"].as_str().unwrap();
            let violates = t["replay_violates"].as_str().unwrap();
            let bound = t["boundary_ns"].as_i64().unwrap();
            let h = t["holds_ns"].as_i64().unwrap();
            let step = t["kind"].as_str().unwrap().contains("step");
            assert!(
                (bound - h).abs() <= if step { 1_000_000 } else { 1_000 },
                "{rel}: {t}"
            );
            let (a, b): (Vec<&str>, Vec<&str>) =
                (holds.split(' ').collect(), violates.split(' ').collect());
            assert_eq!(a.len(), b.len(), "{rel}: {holds} / {violates}");
            let differing: Vec<(&&str, &&str)> = a.iter().zip(&b).filter(|(x, y)| x != y).collect();
            assert_eq!(differing.len(), 1, "{rel}: {holds} / {violates}");
            assert_eq!(sh(holds), 0, "{rel}: {holds}");
            assert_eq!(sh(violates), 1, "{rel}: {violates}");
        }
    }
}

/// The verdict the thresholds claim for magnitude `m` at `piece`: its verdict at `lo`, turned
/// over by each of its flips `m` is past; `None` strictly between a flip's two magnitudes
/// (within its resolution, where it claims nothing).
fn claimed(piece: &Piece, flips: &[&threshold::Threshold], m: i64) -> Option<bool> {
    let between = |t: &&&threshold::Threshold| {
        let (a, b) = (t.holds_at.abs(), t.violates_at.abs());
        a.min(b) < m.abs() && m.abs() < a.max(b)
    };
    if flips.iter().any(|t| between(&t)) {
        return None;
    }
    let passed = flips
        .iter()
        .filter(|t| m.abs() >= t.holds_at.abs().max(t.violates_at.abs()))
        .count();
    Some(piece.violated_at_lo ^ (passed % 2 == 1))
}

/// Magnitudes drawn in a piece: half uniform over its range, half within 2 ms of one of its
/// flips (where a second, unseen flip would hide).
fn draw(rng: &mut Prng, piece: &Piece, flips: &[&threshold::Threshold]) -> i64 {
    let lo = piece.lo.abs();
    let hi = piece.max.abs();
    let near = match piece.unit {
        Unit::Window | Unit::Latency => 2_000_000,
        Unit::Step => 2,
        Unit::Drift => 2_000,
    };
    let m = if !flips.is_empty() && rng.below(2) == 0 {
        let t = flips[rng.below(flips.len() as u64) as usize];
        let c = t.violates_at.abs();
        rng.range_i64((c - near).max(lo), (c + near).min(hi))
    } else {
        rng.range_i64(lo, hi)
    };
    m * piece.max.signum()
}

/// Draws that agree, were cut short, fell within a flip's resolution, and disagree.
fn agree(
    rel: &str,
    (sc, r): &(Scenario, ThresholdReport),
    draws: u64,
    cfg: &ExploreConfig,
) -> (u64, u64, u64, u64) {
    let mut by_piece: BTreeMap<usize, Vec<&threshold::Threshold>> = BTreeMap::new();
    for t in &r.thresholds {
        by_piece.entry(t.piece).or_default().push(t);
    }
    let pieces: Vec<usize> = (0..r.pieces.len())
        .filter(|&i| !r.pieces[i].inconclusive)
        .collect();
    assert!(!pieces.is_empty(), "{rel}: no piece");
    let seed = std::env::var("DISTLOCK_THRESHOLD_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(29);
    let mut rng = Prng::new(seed, 0);
    let mut runs = Vec::new();
    let mut want = Vec::new();
    // Flipping pieces are where a mistake would be: half the draws go there.
    let flipping: Vec<usize> = by_piece.keys().copied().collect();
    for _ in 0..draws {
        let i = if !flipping.is_empty() && rng.below(2) == 0 {
            flipping[rng.below(flipping.len() as u64) as usize]
        } else {
            pieces[rng.below(pieces.len() as u64) as usize]
        };
        let piece = &r.pieces[i];
        let flips = by_piece.get(&i).map(Vec::as_slice).unwrap_or(&[]);
        let m = draw(&mut rng, piece, flips);
        runs.push(threshold::at_magnitude(&piece.faults, m));
        want.push((i, None, m, claimed(piece, flips, m)));
    }
    let got = threshold::verdicts_from_zero(sc, cfg, &runs).unwrap();
    tally(rel, &r.pieces, &want, &got)
}

#[test]
fn random_magnitudes_inside_a_piece_give_the_verdict_its_flips_claim() {
    let draws = std::env::var("DISTLOCK_THRESHOLD_DRAWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_DRAWS);
    let mut total = (0, 0, 0, 0);
    for rel in [
        "tests/models/threshold-pause-by-hand.ron",
        "models/single-px-del-pause.ron",
        "models/single-px-cad-pause.ron",
        "models/watchdog-pause.ron",
        "models/single-clock-step-expires-locks.ron",
        "models/failover-lost-lock.ron",
        "tests/models/threshold-drift-by-hand.ron",
        "tests/models/threshold-latency-by-hand.ron",
    ] {
        let (same, cut, within, differ) = agree(rel, &thresholds(rel), draws, &config());
        eprintln!(
            "{rel}: {draws} draws: {same} agree, {differ} disagree, {cut} cut short by a model budget, {within} within a flip's 1 µs"
        );
        total = (
            total.0 + same,
            total.1 + cut,
            total.2 + within,
            total.3 + differ,
        );
    }
    eprintln!(
        "all: {} agree, {} disagree, {} cut short, {} within a flip's resolution",
        total.0, total.3, total.1, total.2
    );
    assert_eq!(total.3, 0, "draws that disagree with their piece");
}

#[test]
fn a_violating_runs_counterfactual_holds_at_its_figure_and_violates_just_above_it() {
    let mut total_saved = 0;
    for rel in [
        "models/single-px-del-pause.ron",
        "models/watchdog-pause.ron",
        "models/single-clock-step-expires-locks.ron",
        "models/single-px-cad-pause.ron",
    ] {
        let (sc, _) = load(rel);
        let seed = (0..50)
            .find(|&s| {
                !distlock_sim::explore::run_world(&sc, s, distlock_sim::sim::TraceMode::Off)
                    .0
                    .violations
                    .is_empty()
            })
            .unwrap_or_else(|| panic!("{rel}: no violating seed in 0..50"));
        let (w, faults) = sc.build_with(seed, distlock_sim::sim::TraceMode::Off, None);
        let names = w.names();
        let name = |p: distlock_sim::time::ProcId| names[p.index()].clone();
        let cf = threshold::counterfactuals(&sc, seed, &faults, &name);
        assert!(!cf.is_empty(), "{rel} seed {seed}: none");
        let cfg = ExploreConfig { seed, ..config() };
        let mut saved = 0;
        for (c, (i, f)) in cf.iter().zip(
            faults
                .iter()
                .enumerate()
                .filter(|(_, f)| f.magnitude().is_some()),
        ) {
            assert_eq!(
                c.fault,
                f.describe(&name),
                "{rel}: in the order of the faults"
            );
            let res = c.unit.resolution();
            let with = |m: i64| {
                let mut fs = faults.clone();
                fs[i] = threshold::at_magnitude(std::slice::from_ref(&faults[i]), m).remove(0);
                fs
            };
            let Some(h) = c.holds_at else {
                // "No smaller one saves it": at its smallest the run still violates.
                let v = threshold::verdicts_from_zero(&sc, &cfg, &[with(res * c.actual.signum())])
                    .unwrap();
                assert!(
                    matches!(v[0], Ok(Some(_))),
                    "{rel} seed {seed}: {}",
                    c.sentence()
                );
                continue;
            };
            saved += 1;
            let v =
                threshold::verdicts_from_zero(&sc, &cfg, &[with(h), with(h + res * h.signum())])
                    .unwrap();
            assert_eq!(
                v[0],
                Ok(None),
                "{rel} seed {seed}: {} — holds at its figure",
                c.sentence()
            );
            assert!(
                matches!(v[1], Ok(Some(_))),
                "{rel} seed {seed}: {} — violates one step above",
                c.sentence()
            );
            eprintln!("{rel} seed {seed}: {}", c.sentence());
        }
        total_saved += saved;
    }
    assert!(
        total_saved >= 3,
        "faults whose shrinking saves their run: {total_saved}"
    );
}

#[test]
fn one_fault_breaks_the_menus_sizes_miss_are_found_by_the_thresholds() {
    // `explore --faults 1` tries each fault at the menu's one or two sizes and holds on
    // these; some other size of one fault breaks each (the flip's replay confirmed from
    // time 0).
    for rel in [
        "models/classic-redis-docs-failover-race.ron",
        "models/failover-lost-lock.ron",
        "models/failover-wait-false-confidence.ron",
        "models/fencing-incr-regresses-after-failover.ron",
    ] {
        let (sc, text) = load(rel);
        let menu = distlock_sim::explore::systematic::explore(&sc, &text, &config()).unwrap();
        assert!(menu.found.is_none(), "{rel}: the menu now finds it");
        let (_, r) = thresholds(rel);
        assert!(r.violates(), "{rel}: no flip");
        assert!(
            r.replays.iter().any(|rp| rp.confirmed == Some(true)),
            "{rel}: no flip confirmed from time 0"
        );
        assert!(
            r.replays.iter().all(|rp| rp.confirmed != Some(false)),
            "{rel}"
        );
        let t = &r.thresholds[0];
        eprintln!(
            "{rel}: {} of {} from {} ns: {}",
            t.kind,
            t.target,
            t.at.0,
            t.sentence()
        );
    }
}

#[test]
fn the_stepper_says_each_faults_counterfactual_at_the_step_the_fault_opens() {
    // The page's first run (the model as written): every counterfactual listed under the
    // violations is said again by the stepper at the step of its fault, and nowhere else.
    let rel = "models/single-px-cad-pause.ron";
    let (sc, _) = load(rel);
    let seed = 3;
    let (w, faults) = sc.build_with(seed, distlock_sim::sim::TraceMode::Off, None);
    let names = w.names();
    let name = |p: distlock_sim::time::ProcId| names[p.index()].clone();
    let cf = threshold::counterfactuals(&sc, seed, &faults, &name);
    assert!(
        cf.len() >= 2,
        "{rel} seed {seed}: {} counterfactuals",
        cf.len()
    );
    let out = std::env::temp_dir().join(format!("distlock-cf-{}.html", std::process::id()));
    let st = Command::new(env!("CARGO_BIN_EXE_distlock-sim"))
        .args(["replay", rel, "--seed", "3", "--format", "html", "--out"])
        .arg(&out)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert_eq!(
        st.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    let page = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let start = page.find(r#"class="steps""#).expect("a steps block");
    let body = &page[start..];
    let json = &body[body.find('>').unwrap() + 1..body.find("</script>").unwrap()];
    let v: serde_json::Value = serde_json::from_str(&json.replace("<\\/", "</")).unwrap();
    let steps = v["steps"].as_array().unwrap();
    let saying: Vec<&serde_json::Value> = steps
        .iter()
        .filter(|s| s["s"].as_str().unwrap().contains("Counterfactual"))
        .collect();
    assert_eq!(saying.len(), cf.len(), "one step per counterfactual");
    for (s, c) in saying.iter().zip(&cf) {
        assert_eq!(
            s["t"].as_u64(),
            Some(c.at.0),
            "at the fault's instant: {}",
            c.sentence()
        );
        assert_eq!(s["k"].as_str(), Some("fault"), "a fault step");
        assert!(s["s"].as_str().unwrap().contains(&c.sentence()));
    }
}

/// Starts drawn *inside* pieces of time: a fault opened anywhere between two consecutive
/// starts of its family meets the same event first, so its run is the representative's with
/// the magnitude moved by the shift — for a window (pause, crash, cut) its end is what
/// counts, so `(s, d)` runs as `(rep, d − (rep − s))`; for a clock step nothing reads the
/// clock in between, so `(s, δ)` runs as `(rep, δ)`. A drift's reading and a spike's end move
/// with the start by its rate and its declared window: they are not moved this way and are
/// not drawn here. Returns (agree, cut short, within a flip's resolution, disagree).
fn agree_inside(
    rel: &str,
    (sc, r): &(Scenario, ThresholdReport),
    draws: u64,
    rng: &mut Prng,
    cfg: &ExploreConfig,
) -> (u64, u64, u64, u64) {
    let mut by_piece: BTreeMap<usize, Vec<&threshold::Threshold>> = BTreeMap::new();
    for t in &r.thresholds {
        by_piece.entry(t.piece).or_default().push(t);
    }
    // Consecutive starts of one family (kind and target): the piece before each. Only
    // families started before every event of their target (a client's, or a server's with
    // `--every-offset`) have their pieces bounded by consecutive starts; a server's faults
    // are otherwise placed at decision points alone, with its other events between them.
    let mut starts: BTreeMap<(&str, &str), Vec<usize>> = BTreeMap::new();
    for (i, p) in r.pieces.iter().enumerate() {
        if matches!(p.unit, Unit::Window | Unit::Step) {
            starts.entry((&p.kind, &p.target)).or_default().push(i);
        }
    }
    starts.retain(|_, v| v.iter().any(|&i| r.pieces[i].point == "before-event"));
    let mut cands = Vec::new();
    for v in starts.values_mut() {
        v.sort_by_key(|&i| r.pieces[i].at);
        for w in v.windows(2) {
            let (prev, p) = (&r.pieces[w[0]], &r.pieces[w[1]]);
            // Strictly after the previous start's event (1 ns after its start), and at
            // least 2 ns of room.
            if !p.inconclusive && !prev.inconclusive && p.at.0 >= prev.at.0 + 3 {
                cands.push((w[1], prev.at.0 + 2));
            }
        }
    }
    assert!(!cands.is_empty(), "{rel}: no two consecutive starts");
    let flipping: Vec<usize> = (0..cands.len())
        .filter(|&k| by_piece.contains_key(&cands[k].0))
        .collect();
    let mut runs = Vec::new();
    let mut want = Vec::new();
    for _ in 0..draws {
        let k = if !flipping.is_empty() && rng.below(2) == 0 {
            flipping[rng.below(flipping.len() as u64) as usize]
        } else {
            rng.below(cands.len() as u64) as usize
        };
        let (i, earliest) = cands[k];
        let piece = &r.pieces[i];
        let rep = piece.at.0;
        let s = rng.range_i64(earliest as i64, rep as i64) as u64;
        let shift = (rep - s) as i64;
        let flips = by_piece.get(&i).map(Vec::as_slice).unwrap_or(&[]);
        // The magnitude at the representative start; drawn where the moved fault stays in
        // the declared range.
        let mut m = draw(rng, piece, flips);
        if piece.unit == Unit::Window {
            if piece.max - shift < piece.lo {
                continue;
            }
            m = m.min(piece.max - shift);
        }
        let mut faults = threshold::at_magnitude(&piece.faults, m);
        for f in &mut faults {
            f.at = distlock_sim::time::SimTime(s);
            if piece.unit == Unit::Window {
                f.duration_ns = f.duration_ns.map(|d| d + shift as u64);
            }
        }
        runs.push(faults);
        want.push((i, Some(s), m, claimed(piece, flips, m)));
    }
    let got = threshold::verdicts_from_zero(sc, cfg, &runs).unwrap();
    tally(rel, &r.pieces, &want, &got)
}

/// Counts the draws (piece, start inside it if moved, magnitude, claimed verdict) whose run
/// gave the claimed verdict, was cut short, fell within a flip's own 1 us (no claim), or
/// differed (each printed): (same, cut, within, differ).
fn tally(
    rel: &str,
    pieces: &[Piece],
    want: &[(usize, Option<u64>, i64, Option<bool>)],
    got: &[Result<Option<String>, ()>],
) -> (u64, u64, u64, u64) {
    let (mut same, mut cut, mut within, mut differ) = (0, 0, 0, 0);
    for ((i, s, m, w), g) in want.iter().zip(got) {
        let Some(w) = w else {
            within += 1;
            continue;
        };
        match g {
            Err(()) => cut += 1,
            Ok(v) if v.is_some() == *w => same += 1,
            Ok(v) => {
                differ += 1;
                let p = &pieces[*i];
                let opened = s.map_or(String::new(), |s| {
                    format!("opened at {s} ns inside the piece before ")
                });
                eprintln!(
                    "{rel}: {} of {} {opened}from {} ns ({}) at magnitude {m}: claimed {}, run {:?}",
                    p.kind,
                    p.target,
                    p.at.0,
                    p.point,
                    if *w { "violates" } else { "holds" },
                    v
                );
            }
        }
    }
    (same, cut, within, differ)
}

#[test]
fn a_fault_opened_anywhere_inside_a_piece_of_time_runs_as_its_representative_moved_by_the_shift() {
    let draws = std::env::var("DISTLOCK_THRESHOLD_DRAWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_DRAWS);
    let seed = std::env::var("DISTLOCK_THRESHOLD_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(29);
    let mut rng = Prng::new(seed, 2);
    // Servers' faults too, before every event of theirs.
    let cfg = ExploreConfig {
        every_offset: true,
        ..config()
    };
    let mut models = vec![
        ("tests/models/threshold-pause-by-hand.ron", cfg.clone()),
        ("models/single-px-del-pause.ron", cfg.clone()),
        ("models/single-px-cad-pause.ron", cfg.clone()),
        ("models/watchdog-pause.ron", cfg.clone()),
        ("models/single-clock-step-expires-locks.ron", cfg.clone()),
    ];
    // A master's crash before every event of the master: 1,481 starts, each with a mark
    // per event the crash kept from it (sentinels' pings among them), 1.2 M runs (5 min):
    // only when more draws than CI's are asked for.
    if draws > CI_DRAWS {
        let big = ExploreConfig {
            budget_runs: 3_000_000,
            ..cfg.clone()
        };
        models.push(("models/failover-lost-lock.ron", big));
    }
    let mut total = (0, 0, 0, 0);
    for (rel, cfg) in &models {
        let found = thresholds_with(rel, cfg);
        let (same, cut, within, differ) = agree_inside(rel, &found, draws, &mut rng, cfg);
        eprintln!(
            "{rel}: {draws} starts inside pieces: {same} agree, {differ} disagree, {cut} cut short, {within} within a flip's resolution"
        );
        total = (
            total.0 + same,
            total.1 + cut,
            total.2 + within,
            total.3 + differ,
        );
        if draws > CI_DRAWS {
            // The magnitudes at the representative starts of every piece, as the test above.
            let (same, cut, within, differ) = agree(rel, &found, draws, cfg);
            eprintln!(
                "{rel} (--every-offset): {draws} magnitudes: {same} agree, {differ} disagree, {cut} cut short, {within} within a flip's resolution"
            );
            total.3 += differ;
        }
    }
    eprintln!(
        "all: {} agree, {} disagree, {} cut short, {} within a flip's resolution",
        total.0, total.3, total.1, total.2
    );
    assert!(total.0 > 0, "nothing drawn");
    assert_eq!(total.3, 0, "starts inside a piece that disagree with it");
}
