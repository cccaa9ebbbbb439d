import Foundation
import LedgerClient
import LedgerModel

/// One invocation of `kidledger`: one device, one store file. Built only on the public
/// `LedgerClient` API; nothing is created on disk until a command needs the store.
final class CLI {
    let args: Arguments
    let json: Bool
    let storePath: String
    let server: URL?
    private var opened: Ledger?

    init(args: Arguments, environment: [String: String]) throws {
        self.args = args
        self.json = args.flag("--json")
        self.storePath = args.option("--store") ?? environment["KIDLEDGER_STORE"] ?? "./kidledger.store"
        if let text = args.option("--server") ?? environment["KIDLEDGER_SERVER"] {
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw Arguments.UsageError(description: "--server must be an http(s) URL, not '\(text)'")
            }
            server = url
        } else {
            server = nil
        }
    }

    /// The ledger of `--store`, opened (and created) on first use.
    func ledger() async throws -> Ledger {
        if let opened { return opened }
        let store = URL(fileURLWithPath: storePath)
        let ledger = try await Ledger.open(store: store, server: server,
                                           credentials: FileCredentialStore(file: URL(fileURLWithPath: storePath + ".token")))
        opened = ledger
        return ledger
    }

    func emit(_ value: JSONValue) {
        print(value.serializedString)
    }

    /// The ledger, refusing when no server was ever given for it.
    func ledgerWithServer() async throws -> Ledger {
        let ledger = try await ledger()
        guard await ledger.server != nil else { throw CLIError("no server configured; pass --server URL or set KIDLEDGER_SERVER") }
        return ledger
    }

    /// After a mutation: one quick, quiet sync attempt when the ledger is shared.
    func autoSync(_ ledger: Ledger) async {
        guard !args.flag("--no-sync"), ProcessInfo.processInfo.environment["KIDLEDGER_NO_AUTOSYNC"] == nil,
              await ledger.server != nil, let snapshot = try? await ledger.snapshot(),
              snapshot.household?.role != nil || snapshot.mode != .parent else { return }
        _ = try? await withDeadline(seconds: 5) { try await ledger.syncNow() }
    }

    func run() async throws {
        do {
            try await runCommand()
        } catch LedgerError.unauthenticated {
            // A child's device is signed out when a parent unpairs it: it cannot sign in itself.
            if let opened, case .child = await opened.mode {
                throw CLIError("not signed in: this child's device was unpaired (or its token is no longer accepted); on a parent's device run `kidledger child pair NAME`, then `kidledger child-redeem CODE` here")
            }
            throw LedgerError.unauthenticated
        }
    }

    private func runCommand() async throws {
        let command = try args.positional(0, "command (try `kidledger help`)")
        let rest = Array(args.positionals.dropFirst())
        switch command {
        case "signup": try await signup()
        case "login": try await login()
        case "child": try await childCommand(rest)
        case "children": try await children(rest)
        case "add": try await money(rest, take: false)
        case "take": try await money(rest, take: true)
        case "undo": try await undo(rest)
        case "history": try await history(rest)
        case "rename": try await rename(rest)
        case "archive": try await archive(rest, true)
        case "unarchive": try await archive(rest, false)
        case "status": try await status(rest)
        case "sync": try await sync(rest)
        case "restore-server": try await restoreServer(rest)
        case "share": try await share(rest)
        case "invitations": try await invitations(rest)
        case "join": try await join(rest)
        case "leave": try await leave(rest)
        case "export": try await export(rest)
        case "import": try await importFile(rest)
        case "households": try await households(rest)
        case "use": try await use(rest)
        case "signin-oidc": try await signInOIDC()
        case "link": try await link(rest)
        case "redeem": try await redeem(rest)
        case "recovery-codes": try await recoveryCodes(rest)
        case "recover": try await recover(rest)
        case "owner": try await owner(rest)
        case "account": try await account(rest)
        case "push": try await push(rest)
        case "schedule": try await scheduleCommand(rest)
        case "pot": try await potCommand(rest)
        case "goal": try await goalCommand(rest)
        case "child-redeem": try await childRedeem(rest)
        case "balance": try await balanceCommand(rest)
        case "request": try await requestCommand(rest)
        case "requests": try await requestsCommand(rest)
        case "approve": try await decideCommand(rest, approve: true)
        case "decline": try await decideCommand(rest, approve: false)
        default: throw Arguments.UsageError(description: "unknown command '\(command)' (try `kidledger help`)")
        }
    }

    static let usage = """
        usage: kidledger [--store PATH] [--server URL] [--json] COMMAND
          signup --handle H --name N [--device-name D]   login --token T | --pinned
          child add NAME   children   add CHILD AMOUNT [--note T] [--source S]   take CHILD AMOUNT [--note T]
          undo CHILD   history CHILD   rename CHILD NAME   archive CHILD   unarchive CHILD
          status   sync [--watch]   restore-server (owner: after the server went back in time)
          share enable [--yes] [--name N]   share invite HANDLE [--read-only]   share participants
          share revoke HANDLE   share stop   invitations   join ID [--replace-local]   leave
          export [--out FILE]   import FILE
          households   use ID [--replace-local]
          signin-oidc --provider P --id-token T [--nonce N] [--handle H --name N]
          link   redeem CODE   recovery-codes   recover --handle H --code C [--revoke-others]
          owner transfer HANDLE   account delete --confirm HANDLE [--delete-shared] [--out FILE]
          push register APPID KEY   push unregister   push refresh [--seconds S]
          schedule add CHILD AMOUNT --every weekly|every-two-weeks|monthly --first YYYY-MM-DD [--time-zone ZONE]
                       [--end YYYY-MM-DD] [--note T]   (or --rate PERCENT instead of AMOUNT: interest)
          schedule list [CHILD]   schedule pause|remove ID   schedule resume ID [--back-pay]
          schedule edit ID [AMOUNT] [--rate PERCENT] [--every E] [--end YYYY-MM-DD|none] [--note T] [--back-pay]
          pot add CHILD NAME [--target AMOUNT] [--by YYYY-MM-DD]   pot list CHILD
          pot move CHILD AMOUNT FROM-POT TO-POT [--note T]   goal set CHILD POT AMOUNT|none [--by YYYY-MM-DD]
          child pair CHILD [--device-name N]   child devices CHILD   child revoke CHILD TOKENID
          child-redeem CODE [--device-name N] (a child's device)   balance
          request spend|chore AMOUNT NOTE [--child CHILD]   requests [--all]   approve ID [AMOUNT]   decline ID [--note N]
        environment: KIDLEDGER_STORE, KIDLEDGER_SERVER
        """
}

/// Runs `body`, cancelling it after `seconds`.
func withDeadline<T: Sendable>(seconds: Double, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
            throw LedgerError.cancelled
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw LedgerError.cancelled }
        return first
    }
}
