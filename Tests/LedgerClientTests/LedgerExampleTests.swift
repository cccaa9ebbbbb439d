import Foundation
import LedgerServer
import XCTest

/// Runs `ledger-app-example` — a program written against CLIENT_API.md only, built as its own
/// executable in Swift 6 mode — against a real server on loopback.
final class LedgerExampleTests: XCTestCase {
    func testTheAppLikeExampleRunsAgainstARealServer() throws {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("ledger-app-example")
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: executable.path), "ledger-app-example not built")
        let directory = try LoopbackServer.makeDirectory("kidledger-example")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = try LoopbackServer.start(in: directory)
        defer { app.stop() }
        let process = Process()
        process.executableURL = executable
        process.arguments = ["http://127.0.0.1:\(app.port)", directory + "/work"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        try process.run()
        let output = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, output)
        XCTAssertTrue(output.contains("all checks passed"), output)
    }
}
