import Foundation
import LedgerModel
@testable import LedgerServer
import XCTest

/// `kidledger-server check` and `backup` as a newcomer runs them: a wrong folder is a clear
/// message in the command's usual format, never a bare SQLite error.
final class AdminCommandTests: XCTestCase {
    private func run(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = try ServerProcess.binary()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["KIDLEDGER_DATA_DIR"] = nil
        process.environment = environment
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: o, as: UTF8.self), String(decoding: e, as: UTF8.self))
    }

    private func temporaryFolder() throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-admin-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: dir) }
        return dir
    }

    func testCheckAnswersJSONForAMissingDataFolder() throws {
        let base = try temporaryFolder()
        for dir in [base + "/no-such-folder", base] {
            let r = try run(["check", "--data-dir", dir])
            XCTAssertEqual(r.status, 1)
            XCTAssertEqual(r.err, "")
            let report = try JSONValue.parse(r.out.trimmingCharacters(in: .whitespacesAndNewlines))
            XCTAssertEqual(report["ok"]?.boolValue, false)
            let problem = report["problems"]?.arrayValue?.first?.stringValue ?? ""
            XCTAssertTrue(problem.contains(dir), problem)
        }
        XCTAssertFalse(FileManager.default.fileExists(atPath: base + "/no-such-folder"), "check creates nothing")
    }

    func testBackupToAMissingFolderSaysSo() throws {
        let dir = try temporaryFolder()
        XCTAssertEqual(try run(["accounts", "create", "--handle", "mum", "--name", "Mum", "--data-dir", dir]).status, 0)
        let target = dir + "/missing/backup.sqlite"
        let r = try run(["backup", "--to", target, "--data-dir", dir])
        XCTAssertEqual(r.status, 1)
        XCTAssertEqual(r.out, "")
        XCTAssertTrue(r.err.hasPrefix("kidledger-server: cannot write the backup to \(target): the folder \(dir)/missing does not exist"), r.err)
        XCTAssertFalse(r.err.contains("SQLite error"), r.err)

        let good = try run(["backup", "--to", dir + "/backup.sqlite", "--data-dir", dir])
        XCTAssertEqual(good.status, 0, good.err)
        XCTAssertEqual(try JSONValue.parse(good.out.trimmingCharacters(in: .whitespacesAndNewlines))["event"]?.stringValue, "backup")
        let missingData = try run(["backup", "--to", dir + "/other.sqlite", "--data-dir", dir + "/nope"])
        XCTAssertEqual(missingData.status, 1)
        XCTAssertTrue(missingData.err.contains("the data folder \(dir)/nope does not exist"), missingData.err)
    }
}
