import Foundation
import SQLiteKit
import SQLiteServerKit
import Synchronization

/// Copies committed WAL frames into the database file on a thread and connection of its
/// own, so the writer's COMMIT does not wait for a checkpoint (the random writes into the
/// database file and its fsync). The writer runs with `wal_autocheckpoint = 0` and tells
/// this object after each commit; this thread then runs a PASSIVE checkpoint, which blocks
/// neither the writer nor readers, at most every `interval` seconds while commits keep
/// coming. Under continuous writes the log never finds itself fully copied and so never
/// starts over: once it holds more than `restartFrames` frames this object asks the writer
/// (`restartRequested`) to run a RESTART checkpoint between two batches, which has little
/// left to copy and lets the log be reused from its start.
final class Checkpointer: Sendable {
    /// Seconds between checkpoints while writes continue. Default 1: each checkpoint
    /// copies a page once however often it changed since the last one, so the hot pages of
    /// a busy ledger (the newest leaf of each append-only index) and the leaves of the
    /// random-key id index that several inserts hit are copied less often. Measured with
    /// durable POSTs at full speed (64 connections): 2,161 bytes copied per request every
    /// 0.2 s, 1,016 every second. Readers skip the frames already copied, and the log
    /// starts over at `restartFrames` either way.
    let interval: Double
    /// WAL frames after which the writer restarts the log. Default 65,536 (256 MiB of 4 KiB
    /// pages, about 1.5 s of sustained writes at full speed). A restart stalls the writer while it
    /// copies the last frames and fsyncs the database file (2–8 ms in the benchmark once
    /// `prepareRestart` has done the bulk of it), so it should be rare; the log
    /// file keeps its largest size until the server stops (TRUNCATE) — when writes pause,
    /// the log is reused from its start without a restart.
    let restartFrames: Int

    private struct State {
        var dirty = false
        var stopped = false
    }
    private let restart = Atomic<Bool>(false)
    private let state = Mutex(State())
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private nonisolated(unsafe) let db: SQLiteConnection

    init(path: String, interval: Double = 1, restartFrames: Int = 65_536) throws {
        db = try SQLiteConnection(path: path)
        self.interval = interval
        self.restartFrames = restartFrames
        let t = Thread { [self] in self.run() }
        t.name = "kidledger-checkpoint"
        t.start()
    }

    /// Called by the writer after a commit.
    func committed() {
        let first = state.withLock { s -> Bool in
            defer { s.dirty = true }
            return !s.dirty
        }
        if first { wake.signal() }
    }

    /// Whether the writer should run `PRAGMA wal_checkpoint(RESTART)` now (asked once).
    var restartRequested: Bool {
        restart.compareExchange(expected: true, desired: false, ordering: .acquiringAndReleasing).exchanged
    }

    /// Runs a last full checkpoint (so the database file is complete) and stops the thread.
    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
        done.wait()
    }

    private func run() {
        while true {
            wake.wait()
            let stopped = state.withLock { s -> Bool in s.dirty = false; return s.stopped }
            if stopped {
                _ = try? checkpoint("TRUNCATE")
                done.signal()
                return
            }
            if let frames = try? checkpoint("PASSIVE"), frames > restartFrames {
                prepareRestart()
                restart.store(true, ordering: .releasing)
            }
            Thread.sleep(forTimeInterval: interval)
        }
    }

    /// Does here, beside the writer, most of what the writer's RESTART would otherwise do
    /// while commits wait. Under continuous writes a PASSIVE pass never reaches the end of
    /// the log, and SQLite fsyncs the database file only when a pass does: the pages copied
    /// since the last restart are still unsynced, and the RESTART had to fsync all of them
    /// (15–50 ms at 500,000 transactions in the benchmark, growing with the database). So:
    /// fsync the database file now, copy what was committed during the pass, fsync again;
    /// the RESTART is left the last few milliseconds of frames (2–8 ms in the same run).
    private func prepareRestart() {
        try? db.syncDatabaseFile()
        _ = try? checkpoint("PASSIVE")
        try? db.syncDatabaseFile()
    }

    /// Frames in the WAL after a checkpoint in `mode`.
    private func checkpoint(_ mode: String) throws -> Int {
        guard let row = try db.queryOne("PRAGMA wal_checkpoint(\(mode))") else { return 0 }
        return Int(row.int(1))
    }
}
