import Foundation
import LedgerClient
import LedgerModel

extension CLI {
    /// `push register APPID KEY` (this device's token is woken through the server's push
    /// gateway; for demos and tests, where no APNs token exists), `push unregister`,
    /// `push refresh [--seconds S]` (what a background refresh does: sync within S seconds,
    /// say whether anything changed).
    func push(_ rest: [String]) async throws {
        switch rest.first {
        case "register":
            try args.expectPositionals(4)
            let appId = try args.positional(2, "APPID"), key = try args.positional(3, "KEY")
            let ledger = try await ledgerWithServer()
            do {
                try await ledger.registerForPush(appId: appId, pushKey: key)
            } catch LedgerError.server(code: "push_not_configured", _, _) {
                throw CLIError("this server sends no push wakes (its operator configured no --push-gateway)")
            } catch LedgerError.invalidInput(_, let message) {
                throw CLIError(Wording.lowered(message))
            }
            if json { emit(.object(["registered": true, "appId": .string(appId)])) } else { print("this device is woken by changes made on other devices") }
        case "unregister":
            try args.expectPositionals(2)
            try await ledgerWithServer().unregisterForPush()
            if json { emit(.object(["registered": false])) } else { print("this device is no longer woken") }
        case "refresh":
            try args.expectPositionals(2)
            let seconds = Double(args.options["--seconds"] ?? "25") ?? 25
            let changed = try await ledgerWithServer().backgroundRefresh(deadline: Date().addingTimeInterval(seconds))
            if json { emit(.object(["changed": .bool(changed)])) } else { print(changed ? "changes synced" : "nothing new") }
        default:
            throw Arguments.UsageError(description: "usage: kidledger push register APPID KEY | push unregister | push refresh [--seconds S]")
        }
    }
}
