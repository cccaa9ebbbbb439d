import Foundation
import LedgerClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Prints one line on stderr and exits with `status`.
func fail(_ message: String, status: Int32) -> Never {
    FileHandle.standardError.write(Data("kidledger: \(message)\n".utf8))
    exit(status)
}

do {
    let args = try Arguments(Array(CommandLine.arguments.dropFirst()))
    if args.flag("--help") || args.positionals.isEmpty || args.positionals.first == "help" {
        print(CLI.usage)
        exit(args.positionals.isEmpty && !args.flag("--help") ? 2 : 0)  // `help` opens no store
    }
    try await CLI(args: args, environment: ProcessInfo.processInfo.environment).run()
} catch let error as Arguments.UsageError {
    fail(error.description, status: 2)
} catch let error as CLIError {
    fail(error.description, status: 1)
} catch let error as LedgerError {
    fail(Wording.describe(error), status: 1)
} catch {
    fail(String(describing: error).split(separator: "\n").first.map(String.init) ?? "error", status: 1)
}
