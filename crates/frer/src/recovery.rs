//! Sequence recovery (802.1CB 7.4.2, 7.4.3) and individual recovery (7.5): the function that
//! passes the first copy of each sequence number and discards the others.
//!
//! One `SequenceRecovery` is one recovery function instance: a compound stream's sequence
//! recovery, or a member stream's individual recovery (`individual_recovery: true`). It has no
//! clock: every call takes the current time in nanoseconds, and the reset timer
//! (RemainingTicks) is kept as an absolute deadline.
//!
//! Decisions on the standard's open points (see ../../../docs/8021cb-decisions.md):
//! - **Out-of-range bound.** A packet is rogue when `|delta| >= history_length`, the 2017 text.
//!   The history holds `history_length` numbers (RecovSeqNum and the `history_length - 1`
//!   before it), so the accepted window is symmetric: `delta` in `-(HL-1)..=HL-1`.
//! - **Lost packets after a reset** (maintenance request 376). A reset clears the history, so
//!   a literal implementation counts the `HL - 1` numbers before the first accepted packet as
//!   lost. Here only numbers at or after the first packet accepted since the reset are counted.
//! - **Timer.** RemainingTicks is reloaded by every passed tagged packet and, under individual
//!   recovery only, by every discarded one (duplicate or rogue), as 7.4.3.4 and 10.4.1.10
//!   demand. When it runs out the function resets once (Resets += 1, TakeAny) and the timer
//!   stays stopped until the next reload, so an idle function does not count a reset every
//!   timeout period. Under individual recovery this rule can lock a member stream out: after a
//!   cut longer than `history_length` frames but shorter than the timeout, every frame is rogue
//!   and reloads the timer. `RecoveryParams::lockout_free_rate` says up to which rate that
//!   cannot happen.
//! - **Defaults** are frerlab's, not YANG's (history length 2, no timeout), which can black a
//!   stream out for good after a rogue jump: see `DEFAULT_HISTORY_LENGTH` and
//!   `default_reset_timeout_ns`.
//! - **Tagless packets** count in `tagless_packets`; one that passes (take-no-sequence) also
//!   counts in `passed_packets`, so every packet is counted exactly once in passed, discarded,
//!   rogue or dropped-tagless. It does not reload the timer (it carries no sequence number).
//!
//! Over 600 lines only with its unit tests (about 260 of them); the recovery functions are about
//! 500.

use core::fmt;
use core::str::FromStr;

use crate::SeqNum;

/// Smallest frerSeqRcvyHistoryLength (YANG `history-length` minimum, also its default).
pub const MIN_HISTORY_LENGTH: u16 = 2;
/// Largest supported frerSeqRcvyHistoryLength: 1024 covers the seeds' listeners; the history
/// is a fixed 1024-bit array, so no allocation and no length beyond the storage.
pub const MAX_HISTORY_LENGTH: u16 = 1024;
const HISTORY_WORDS: usize = MAX_HISTORY_LENGTH as usize / 64;
/// frerlab's default frerSeqRcvyHistoryLength. YANG's default is 2, under which a copy two
/// numbers late is rogue; 32 absorbs a 32-frame skew between paths and is the largest history
/// Microchip LAN966x switches take, so a default configuration can be exported to them.
pub const DEFAULT_HISTORY_LENGTH: u16 = 32;
/// frerlab's default frerSeqRcvyResetMSec of a sequence recovery function, in nanoseconds.
/// YANG gives no default; without a timeout a rogue jump (a talker restarting its numbers)
/// blacks the stream out for good, and with this one for at most 100 ms.
pub const DEFAULT_RESET_TIMEOUT_NS: u64 = 100_000_000;
/// frerlab's default frerSeqRcvyResetMSec of an individual recovery function, in
/// nanoseconds: 1 ms, the shortest the millisecond-based managed object can give, so that a
/// member stream cannot be locked out below `(history_length - 1) / 1 ms` frames per second.
/// A short timeout costs nothing here: the sequence recovery after it still eliminates.
pub const DEFAULT_INDIVIDUAL_RESET_TIMEOUT_NS: u64 = 1_000_000;

/// frerlab's default reset timeout for a recovery function, in nanoseconds.
pub fn default_reset_timeout_ns(individual_recovery: bool) -> u64 {
    if individual_recovery {
        DEFAULT_INDIVIDUAL_RESET_TIMEOUT_NS
    } else {
        DEFAULT_RESET_TIMEOUT_NS
    }
}

/// frerSeqRcvyAlgorithm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// VectorRecoveryAlgorithm (7.4.3.4): a history window of recently seen numbers.
    #[default]
    Vector,
    /// MatchRecoveryAlgorithm (7.4.3.5): discards only a repeat of the last number.
    Match,
}

impl Algorithm {
    /// The YANG name: "vector" or "match".
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Vector => "vector",
            Algorithm::Match => "match",
        }
    }
}

impl FromStr for Algorithm {
    type Err = ParamError;

    fn from_str(s: &str) -> Result<Self, ParamError> {
        match s {
            "vector" => Ok(Algorithm::Vector),
            "match" => Ok(Algorithm::Match),
            _ => Err(ParamError::Algorithm(s.to_string())),
        }
    }
}

/// A parameter that is out of its valid range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ParamError {
    /// frerSeqRcvyHistoryLength outside `MIN_HISTORY_LENGTH..=MAX_HISTORY_LENGTH`.
    HistoryLength(i64),
    /// A reset timeout of zero or less (no timeout is `None`).
    ResetTimeout(i64),
    /// An algorithm name other than "vector" or "match".
    Algorithm(String),
}

impl fmt::Display for ParamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamError::HistoryLength(v) => write!(
                f,
                "history_length {v} is out of range ({MIN_HISTORY_LENGTH}..={MAX_HISTORY_LENGTH})"
            ),
            ParamError::ResetTimeout(v) => write!(
                f,
                "reset_timeout_ns {v} is out of range (1..={}, or none for no timeout)",
                u64::MAX
            ),
            ParamError::Algorithm(v) => {
                write!(f, "algorithm {v:?} is not valid (\"vector\" or \"match\")")
            }
        }
    }
}

impl std::error::Error for ParamError {}

/// Checks a history length given as any integer, e.g. from Python or a config file.
///
/// # Errors
/// `ParamError::HistoryLength` when it is outside `2..=1024`.
pub fn check_history_length(value: i64) -> Result<u16, ParamError> {
    match u16::try_from(value) {
        Ok(v) if (MIN_HISTORY_LENGTH..=MAX_HISTORY_LENGTH).contains(&v) => Ok(v),
        _ => Err(ParamError::HistoryLength(value)),
    }
}

/// Checks a reset timeout given as any integer; `None` means no timeout.
///
/// # Errors
/// `ParamError::ResetTimeout` when it is zero or negative.
pub fn check_reset_timeout(value: Option<i64>) -> Result<Option<u64>, ParamError> {
    match value {
        None => Ok(None),
        Some(v) if v > 0 => Ok(Some(v as u64)),
        Some(v) => Err(ParamError::ResetTimeout(v)),
    }
}

/// The managed parameters of a recovery function (frerSeqRcvy* objects).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryParams {
    /// frerSeqRcvyAlgorithm.
    pub algorithm: Algorithm,
    /// frerSeqRcvyHistoryLength, in numbers (`2..=1024`); unused by the match algorithm.
    pub history_length: u16,
    /// frerSeqRcvyResetMSec, in nanoseconds; `None` never times out.
    pub reset_timeout_ns: Option<u64>,
    /// frerSeqRcvyIndividualRecovery: discards also reload the timer (7.5).
    pub individual_recovery: bool,
    /// frerSeqRcvyTakeNoSequence: pass packets that carry no sequence number.
    pub take_no_sequence: bool,
}

impl Default for RecoveryParams {
    /// frerlab's defaults: a sequence recovery function, vector algorithm,
    /// `DEFAULT_HISTORY_LENGTH`, `DEFAULT_RESET_TIMEOUT_NS` (YANG's are history length 2 and
    /// no timeout).
    fn default() -> Self {
        RecoveryParams {
            algorithm: Algorithm::Vector,
            history_length: DEFAULT_HISTORY_LENGTH,
            reset_timeout_ns: Some(DEFAULT_RESET_TIMEOUT_NS),
            individual_recovery: false,
            take_no_sequence: false,
        }
    }
}

impl RecoveryParams {
    /// The highest frame rate (frames per second) at which this function cannot lock a
    /// member stream out; `None` when it never can.
    ///
    /// Only individual recovery with the vector algorithm can: its rogue discards reload the
    /// timer (7.4.3.4, 10.4.1.10), so when a path comes back after a cut that lost
    /// `history_length` or more frames, but lasted less than the reset timeout, every frame of
    /// that path is rogue and keeps the timer from ever firing. No cut shorter than the
    /// timeout loses that many frames while the rate stays below
    /// `(history_length - 1) / timeout`. Without a timeout the answer is 0: any long enough
    /// cut locks the member out for good.
    pub fn lockout_free_rate(&self) -> Option<f64> {
        if !self.individual_recovery || self.algorithm != Algorithm::Vector {
            return None;
        }
        Some(match self.reset_timeout_ns {
            None => 0.0,
            Some(timeout) => f64::from(self.history_length - 1) * 1e9 / timeout as f64,
        })
    }
}

/// The clause-10 counters of one recovery function (frerCpsSeqRcvy*), 64-bit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecoveryCounters {
    /// frerCpsSeqRcvyPassedPackets.
    pub passed_packets: u64,
    /// frerCpsSeqRcvyDiscardedPackets (duplicates).
    pub discarded_packets: u64,
    /// frerCpsSeqRcvyOutOfOrderPackets.
    pub out_of_order_packets: u64,
    /// frerCpsSeqRcvyRoguePackets.
    pub rogue_packets: u64,
    /// frerCpsSeqRcvyLostPackets.
    pub lost_packets: u64,
    /// frerCpsSeqRcvyTaglessPackets.
    pub tagless_packets: u64,
    /// frerCpsSeqRcvyResets.
    pub resets: u64,
}

impl RecoveryCounters {
    /// Every counter with its snake_case name, in a fixed order.
    pub fn entries(&self) -> [(&'static str, u64); 7] {
        [
            ("passed_packets", self.passed_packets),
            ("discarded_packets", self.discarded_packets),
            ("out_of_order_packets", self.out_of_order_packets),
            ("rogue_packets", self.rogue_packets),
            ("lost_packets", self.lost_packets),
            ("tagless_packets", self.tagless_packets),
            ("resets", self.resets),
        ]
    }
}

/// What the function did with one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Passed on (the first copy of its number, or an untagged packet under take-no-sequence).
    Pass,
    /// Discarded: its number was already passed.
    Duplicate,
    /// Discarded: its number is outside the history window (vector algorithm only).
    Rogue,
    /// Discarded: it carries no sequence number and take-no-sequence is off.
    Tagless,
}

impl Verdict {
    /// True for `Verdict::Pass`.
    #[inline]
    pub fn is_pass(self) -> bool {
        self == Verdict::Pass
    }

    /// The name used in test vectors and reports: "pass", "duplicate", "rogue", "tagless".
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Duplicate => "duplicate",
            Verdict::Rogue => "rogue",
            Verdict::Tagless => "tagless",
        }
    }
}

/// SequenceHistory as a ring of bits indexed by sequence number: number `n` lives at bit
/// `n & mask`, with `mask + 1` the history length rounded up to a power of two (which divides
/// 65536, so the ring stays consistent across the wrap). Bits of numbers outside the window
/// are always 0.
#[derive(Clone, Debug)]
struct History {
    words: [u64; HISTORY_WORDS],
    mask: u16,
}

impl History {
    fn new(history_length: u16) -> Self {
        History {
            words: [0; HISTORY_WORDS],
            mask: history_length.next_power_of_two() - 1,
        }
    }

    #[inline]
    fn slot(&self, seq: SeqNum) -> (usize, u64) {
        let bit = seq.0 & self.mask;
        (usize::from(bit / 64), 1u64 << (bit % 64))
    }

    #[inline]
    fn get(&self, seq: SeqNum) -> bool {
        let (word, bit) = self.slot(seq);
        self.words[word] & bit != 0
    }

    #[inline]
    fn set(&mut self, seq: SeqNum) {
        let (word, bit) = self.slot(seq);
        self.words[word] |= bit;
    }

    /// Clears the bit of `seq` and says whether it was set.
    #[inline]
    fn take(&mut self, seq: SeqNum) -> bool {
        let (word, bit) = self.slot(seq);
        let was_set = self.words[word] & bit != 0;
        self.words[word] &= !bit;
        was_set
    }

    fn clear(&mut self) {
        self.words = [0; HISTORY_WORDS];
    }
}

/// One sequence recovery or individual recovery function.
#[derive(Clone, Debug)]
pub struct SequenceRecovery {
    params: RecoveryParams,
    recov_seq_num: SeqNum,
    history: History,
    /// How many of the newest window positions hold numbers accepted since the last reset
    /// (1..=history_length); older positions are not counted as lost when they leave.
    history_fill: u16,
    take_any: bool,
    /// RemainingTicks as an absolute time; `None` while the timer is stopped.
    timer_deadline_ns: Option<u64>,
    counters: RecoveryCounters,
}

impl SequenceRecovery {
    /// A function in its initial state (as right after SequenceRecoveryReset, uncounted).
    ///
    /// # Errors
    /// `ParamError` when the history length or reset timeout is out of range.
    pub fn new(params: RecoveryParams) -> Result<Self, ParamError> {
        check_history_length(i64::from(params.history_length))?;
        if params.reset_timeout_ns == Some(0) {
            return Err(ParamError::ResetTimeout(0));
        }
        Ok(SequenceRecovery {
            history: History::new(params.history_length),
            params,
            recov_seq_num: SeqNum(u16::MAX),
            history_fill: 0,
            take_any: true,
            timer_deadline_ns: None,
            counters: RecoveryCounters::default(),
        })
    }

    /// The parameters this function was created with.
    pub fn params(&self) -> &RecoveryParams {
        &self.params
    }

    /// The clause-10 counters.
    pub fn counters(&self) -> &RecoveryCounters {
        &self.counters
    }

    /// RecovSeqNum: the highest number accepted so far (meaningless while `take_any`).
    pub fn recov_seq_num(&self) -> SeqNum {
        self.recov_seq_num
    }

    /// TakeAny: the next tagged packet is accepted whatever its number.
    pub fn take_any(&self) -> bool {
        self.take_any
    }

    /// Fires the reset timeout if it is due at `now_ns` (RECOVERY_TIMEOUT).
    #[inline]
    pub fn advance(&mut self, now_ns: u64) {
        if matches!(self.timer_deadline_ns, Some(deadline) if now_ns >= deadline) {
            self.reset();
        }
    }

    /// SequenceRecoveryReset, as on a management reset: forget the history, accept the next
    /// packet whatever its number, count `resets`.
    pub fn reset(&mut self) {
        self.recov_seq_num = SeqNum(u16::MAX);
        self.history.clear();
        self.history_fill = 0;
        self.take_any = true;
        self.timer_deadline_ns = None;
        self.counters.resets += 1;
    }

    /// Processes one packet arriving at `now_ns`; `seq` is `None` for a packet without a
    /// sequence number. Returns whether it passes and, if not, why.
    #[inline]
    pub fn receive(&mut self, seq: Option<SeqNum>, now_ns: u64) -> Verdict {
        self.advance(now_ns);
        let Some(seq) = seq else {
            self.counters.tagless_packets += 1;
            if self.params.take_no_sequence {
                self.counters.passed_packets += 1;
                return Verdict::Pass;
            }
            return Verdict::Tagless;
        };
        let verdict = match self.params.algorithm {
            Algorithm::Vector => self.vector_recovery(seq),
            Algorithm::Match => self.match_recovery(seq),
        };
        if verdict.is_pass() || self.params.individual_recovery {
            self.reload_timer(now_ns);
        }
        verdict
    }

    #[inline]
    fn reload_timer(&mut self, now_ns: u64) {
        if let Some(timeout) = self.params.reset_timeout_ns {
            self.timer_deadline_ns = Some(now_ns.saturating_add(timeout));
        }
    }

    /// VectorRecoveryAlgorithm, counting what it decides.
    #[inline]
    fn vector_recovery(&mut self, seq: SeqNum) -> Verdict {
        if self.take_any {
            self.take_any = false;
            self.history.set(seq);
            self.history_fill = 1;
            self.recov_seq_num = seq;
            self.counters.passed_packets += 1;
            return Verdict::Pass;
        }
        let history_length = i32::from(self.params.history_length);
        let delta = seq.delta_from(self.recov_seq_num);
        if delta >= history_length || delta <= -history_length {
            self.counters.rogue_packets += 1;
            return Verdict::Rogue;
        }
        if delta <= 0 {
            if self.history.get(seq) {
                self.counters.discarded_packets += 1;
                return Verdict::Duplicate;
            }
            self.history.set(seq);
            self.counters.out_of_order_packets += 1;
        } else {
            if delta != 1 {
                self.counters.out_of_order_packets += 1;
            }
            self.slide_window(delta as u16);
            self.history.set(seq);
            self.recov_seq_num = seq;
        }
        self.counters.passed_packets += 1;
        Verdict::Pass
    }

    /// Moves the window `steps` numbers forward (`1..history_length`): the oldest `steps`
    /// numbers leave it, and each of them never seen since the reset counts as lost.
    #[inline]
    fn slide_window(&mut self, steps: u16) {
        let history_length = self.params.history_length;
        let oldest = self
            .recov_seq_num
            .wrapping_add(1)
            .wrapping_add(history_length.wrapping_neg());
        let first_counted = history_length - self.history_fill;
        for k in 0..steps {
            let seen = self.history.take(oldest.wrapping_add(k));
            if !seen && k >= first_counted {
                self.counters.lost_packets += 1;
            }
        }
        self.history_fill = (self.history_fill + steps).min(history_length);
    }

    /// MatchRecoveryAlgorithm, counting what it decides.
    #[inline]
    fn match_recovery(&mut self, seq: SeqNum) -> Verdict {
        if !self.take_any {
            let delta = seq.delta_from(self.recov_seq_num);
            if delta == 0 {
                self.counters.discarded_packets += 1;
                return Verdict::Duplicate;
            }
            if delta != 1 {
                self.counters.out_of_order_packets += 1;
            }
        }
        self.take_any = false;
        self.recov_seq_num = seq;
        self.counters.passed_packets += 1;
        Verdict::Pass
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(history_length: u16) -> SequenceRecovery {
        SequenceRecovery::new(RecoveryParams {
            history_length,
            ..RecoveryParams::default()
        })
        .unwrap()
    }

    fn feed(rcvy: &mut SequenceRecovery, seqs: &[u16]) -> Vec<Verdict> {
        seqs.iter()
            .map(|&s| rcvy.receive(Some(SeqNum(s)), 0))
            .collect()
    }

    use Verdict::{Duplicate, Pass, Rogue};

    #[test]
    fn rejects_out_of_range_parameters_with_the_value_and_range() {
        for bad in [0u16, 1, 1025] {
            let err = SequenceRecovery::new(RecoveryParams {
                history_length: bad,
                ..RecoveryParams::default()
            })
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("history_length {bad} is out of range (2..=1024)")
            );
        }
        assert_eq!(check_history_length(-1), Err(ParamError::HistoryLength(-1)));
        assert_eq!(
            check_reset_timeout(Some(0)),
            Err(ParamError::ResetTimeout(0))
        );
        assert!("vectr"
            .parse::<Algorithm>()
            .unwrap_err()
            .to_string()
            .contains("\"vectr\""));
    }

    #[test]
    fn two_identical_paths_pass_each_number_once() {
        let mut r = vector(4);
        assert_eq!(
            feed(&mut r, &[0, 0, 1, 1, 2, 2]),
            [Pass, Duplicate, Pass, Duplicate, Pass, Duplicate]
        );
        let c = r.counters();
        assert_eq!(
            (
                c.passed_packets,
                c.discarded_packets,
                c.lost_packets,
                c.out_of_order_packets
            ),
            (3, 3, 0, 0)
        );
    }

    #[test]
    fn rogue_bound_is_history_length_on_both_sides() {
        // Window after 100: 97..=100 for HL 4. delta +3 passes, +4 is rogue.
        let mut r = vector(4);
        assert_eq!(feed(&mut r, &[100, 104]), [Pass, Rogue]);
        assert_eq!(feed(&mut r, &[103]), [Pass]);
        // Now RecovSeqNum 103: delta -3 (100) is a duplicate inside the window, -4 (99) rogue.
        assert_eq!(feed(&mut r, &[100, 99]), [Duplicate, Rogue]);
        // 101 was never seen and is inside the window: late but passes.
        assert_eq!(feed(&mut r, &[101]), [Pass]);
        assert_eq!(r.counters().rogue_packets, 2);
    }

    #[test]
    fn lost_counts_numbers_that_leave_the_window_unseen() {
        let mut r = vector(4);
        feed(&mut r, &[0, 1, 3, 4, 5]); // 2 missing; leaves the window when 6 arrives
        assert_eq!(r.counters().lost_packets, 0);
        feed(&mut r, &[6]);
        assert_eq!(r.counters().lost_packets, 1);
        feed(&mut r, &[9]); // 7, 8 pass out of the window later
        assert_eq!(r.counters().lost_packets, 1);
        feed(&mut r, &[12]); // window now 9..=12: 7 and 8 left unseen
        assert_eq!(r.counters().lost_packets, 3);
    }

    #[test]
    fn no_lost_counted_for_numbers_before_the_first_packet_after_a_reset() {
        let mut r = vector(8);
        feed(&mut r, &[50, 51, 52, 53, 54, 55, 56, 57, 58, 59]);
        assert_eq!(r.counters().lost_packets, 0);
        r.reset();
        feed(&mut r, &[1000, 1001, 1003]);
        feed(&mut r, &(1004..1020).collect::<Vec<_>>());
        assert_eq!(r.counters().lost_packets, 1, "only 1002 was lost");
    }

    #[test]
    fn wraps_at_65535_without_out_of_order() {
        let mut r = vector(32);
        assert_eq!(
            feed(&mut r, &[65534, 65535, 0, 1, 65535, 0]),
            [Pass, Pass, Pass, Pass, Duplicate, Duplicate]
        );
        assert_eq!(r.counters().out_of_order_packets, 0);
        let mut m = SequenceRecovery::new(RecoveryParams {
            algorithm: Algorithm::Match,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            feed(&mut m, &[65535, 0, 0, 1]),
            [Pass, Pass, Duplicate, Pass]
        );
        assert_eq!(m.counters().out_of_order_packets, 0);
    }

    #[test]
    fn timeout_counts_from_the_last_reload_and_fires_once() {
        let params = RecoveryParams {
            history_length: 4,
            reset_timeout_ns: Some(1000),
            ..RecoveryParams::default()
        };
        let mut r = SequenceRecovery::new(params).unwrap();
        assert_eq!(r.receive(Some(SeqNum(10)), 0), Pass);
        assert_eq!(r.receive(Some(SeqNum(10)), 900), Duplicate); // no reload (not individual)
        assert_eq!(r.receive(Some(SeqNum(10)), 999), Duplicate);
        assert_eq!(
            r.receive(Some(SeqNum(10)), 1000),
            Pass,
            "timed out at 0 + 1000: TakeAny"
        );
        r.advance(5000);
        r.advance(9000);
        assert_eq!(
            r.counters().resets,
            2,
            "one reset per expiry, not per period"
        );
    }

    #[test]
    fn individual_recovery_discards_reload_the_timer() {
        let params = RecoveryParams {
            history_length: 4,
            reset_timeout_ns: Some(1000),
            individual_recovery: true,
            ..RecoveryParams::default()
        };
        let mut r = SequenceRecovery::new(params).unwrap();
        r.receive(Some(SeqNum(10)), 0);
        assert_eq!(r.receive(Some(SeqNum(10)), 900), Duplicate);
        assert_eq!(
            r.receive(Some(SeqNum(10)), 1800),
            Duplicate,
            "reloaded at 900"
        );
        assert_eq!(r.receive(Some(SeqNum(5000)), 2700), Rogue);
        assert_eq!(
            r.receive(Some(SeqNum(5000)), 3600),
            Rogue,
            "rogue reloads too"
        );
        assert_eq!(r.counters().resets, 0);
    }

    #[test]
    fn a_cut_longer_than_the_window_but_shorter_than_the_timeout_locks_a_member_out() {
        // 802.1CB's own behaviour (7.4.3.4): the member's rogue frames keep reloading the timer
        let params = RecoveryParams {
            history_length: 8,
            reset_timeout_ns: Some(500_000_000),
            individual_recovery: true,
            ..RecoveryParams::default()
        };
        assert_eq!(params.lockout_free_rate(), Some(14.0));
        let mut r = SequenceRecovery::new(params).unwrap();
        let period = 200_000; // 5 kframes/s
        for s in 0..100u16 {
            assert_eq!(r.receive(Some(SeqNum(s)), u64::from(s) * period), Pass);
        }
        // a 50 ms cut: numbers 100..349 never arrive
        let passed: usize = (350..4000u16)
            .filter(|&s| r.receive(Some(SeqNum(s)), u64::from(s) * period).is_pass())
            .count();
        assert_eq!((passed, r.counters().resets), (0, 0), "locked out");
    }

    #[test]
    fn the_default_individual_timeout_resynchronises_after_the_same_cut() {
        let params = RecoveryParams {
            individual_recovery: true,
            reset_timeout_ns: Some(default_reset_timeout_ns(true)),
            ..RecoveryParams::default()
        };
        assert_eq!(params.lockout_free_rate(), Some(31_000.0));
        let mut r = SequenceRecovery::new(params).unwrap();
        let period = 200_000;
        for s in 0..100u16 {
            r.receive(Some(SeqNum(s)), u64::from(s) * period);
        }
        let passed = (350..4000u16)
            .filter(|&s| r.receive(Some(SeqNum(s)), u64::from(s) * period).is_pass())
            .count();
        assert_eq!((passed, r.counters().resets), (3650, 1));
    }

    #[test]
    fn only_individual_vector_recovery_can_lock_out() {
        let sequence = RecoveryParams::default();
        assert_eq!(sequence.lockout_free_rate(), None);
        let matching = RecoveryParams {
            algorithm: Algorithm::Match,
            individual_recovery: true,
            ..RecoveryParams::default()
        };
        assert_eq!(matching.lockout_free_rate(), None);
        let never = RecoveryParams {
            individual_recovery: true,
            reset_timeout_ns: None,
            ..RecoveryParams::default()
        };
        assert_eq!(never.lockout_free_rate(), Some(0.0));
    }

    #[test]
    fn tagless_packets_pass_only_with_take_no_sequence() {
        let mut r = vector(4);
        assert_eq!(r.receive(None, 0), Verdict::Tagless);
        let mut t = SequenceRecovery::new(RecoveryParams {
            take_no_sequence: true,
            ..Default::default()
        })
        .unwrap();
        assert_eq!(t.receive(None, 0), Pass);
        assert_eq!(
            (t.counters().tagless_packets, t.counters().passed_packets),
            (1, 1)
        );
        assert_eq!(
            (r.counters().tagless_packets, r.counters().passed_packets),
            (1, 0)
        );
    }

    #[test]
    fn history_1024_accepts_late_packets_across_the_whole_window() {
        let mut r = vector(1024);
        feed(&mut r, &[0]);
        feed(&mut r, &[1023]);
        for s in 1..1023 {
            assert_eq!(r.receive(Some(SeqNum(s)), 0), Pass, "late {s}");
        }
        assert_eq!(r.receive(Some(SeqNum(0)), 0), Duplicate);
        assert_eq!(r.counters().lost_packets, 0);
    }
}
