import Foundation

/// Runs the `kidledger` executable built next to the tests, as a user would.
enum KidledgerRunner {
    struct Run { var status: Int32; var out: String; var err: String }

    static var executable: URL {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("kidledger")
    }

    /// Runs `kidledger arguments…` in `directory` (when given), without the KIDLEDGER_STORE and
    /// KIDLEDGER_SERVER of the test's environment, with `environment` added.
    static func run(_ arguments: [String], in directory: String? = nil, environment: [String: String] = [:]) throws -> Run {
        let process = Process()
        process.executableURL = executable
        if let directory { process.currentDirectoryURL = URL(fileURLWithPath: directory) }
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["KIDLEDGER_STORE"] = nil; env["KIDLEDGER_SERVER"] = nil
        env.merge(environment) { _, new in new }
        process.environment = env
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let o = out.fileHandleForReading.readDataToEndOfFile(), e = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Run(status: process.terminationStatus, out: String(decoding: o, as: UTF8.self), err: String(decoding: e, as: UTF8.self))
    }
}
