import Foundation
import LedgerClient
import LedgerModel
#if canImport(Glibc)
import Glibc
#endif

/// The transport of a store without a server.
private struct NoServer: Transport {
    func send(_ request: TransportRequest) throws -> TransportResponse { throw TransportError.unreachable("no server configured") }
}

/// One invocation of `kidledger`: one device, one store file.
final class CLI {
    let args: Arguments
    let json: Bool
    let store: LedgerStore
    let service: LedgerService
    let engine: SyncEngine
    let hasServer: Bool

    init(args: Arguments, environment: [String: String]) throws {
        self.args = args
        self.json = args.flag("--json")
        let path = args.option("--store") ?? environment["KIDLEDGER_STORE"] ?? "./kidledger.store"
        store = try LedgerStore(path: path)
        if let server = args.option("--server") ?? environment["KIDLEDGER_SERVER"] {
            guard let url = URL(string: server), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                throw Arguments.UsageError(description: "--server must be an http(s) URL, not '\(server)'")
            }
            try store.set(.serverURL, server)
        }
        let transport: any Transport
        if let server = try store.string(.serverURL), let url = URL(string: server) {
            transport = URLSessionTransport(baseURL: url)
            hasServer = true
        } else {
            transport = NoServer()
            hasServer = false
        }
        service = LedgerService(store: store)
        engine = SyncEngine(store: store, transport: transport)
    }

    func emit(_ value: JSONValue) {
        print(value.serializedString)
    }

    func requireServer() throws {
        if !hasServer { throw ClientError.noServer }
    }

    /// After a mutation: one quick, quiet sync attempt when the ledger is shared.
    func autoSync() {
        guard hasServer, !args.flag("--no-sync"), ProcessInfo.processInfo.environment["KIDLEDGER_NO_AUTOSYNC"] == nil,
              (try? store.phase()) == .shared else { return }
        let saved = engine.retry
        engine.retry = .once
        engine.api.timeout = 5
        _ = try? engine.sync()
        engine.retry = saved
        engine.api.timeout = 30
    }

    func run() throws {
        let command = try args.positional(0, "command (try `kidledger help`)")
        let rest = Array(args.positionals.dropFirst())
        switch command {
        case "help": print(CLI.usage)
        case "signup": try signup()
        case "login": try login()
        case "child": try childCommand(rest)
        case "children": try children(rest)
        case "add": try money(rest, take: false)
        case "take": try money(rest, take: true)
        case "undo": try undo(rest)
        case "history": try history(rest)
        case "rename": try rename(rest)
        case "archive": try archive(rest, true)
        case "unarchive": try archive(rest, false)
        case "status": try status(rest)
        case "sync": try sync(rest)
        case "share": try share(rest)
        case "invitations": try invitations(rest)
        case "join": try join(rest)
        case "leave": try leave(rest)
        case "export": try export(rest)
        case "import": try importFile(rest)
        default: throw Arguments.UsageError(description: "unknown command '\(command)' (try `kidledger help`)")
        }
    }

    static let usage = """
        usage: kidledger [--store PATH] [--server URL] [--json] COMMAND
          signup --handle H --name N [--device-name D]   login --token T | --pinned
          child add NAME   children   add CHILD AMOUNT [--note T] [--source S]   take CHILD AMOUNT [--note T]
          undo CHILD   history CHILD   rename CHILD NAME   archive CHILD   unarchive CHILD
          status   sync [--watch]
          share enable [--yes] [--name N]   share invite HANDLE [--read-only]   share participants
          share revoke HANDLE   share stop   invitations   join ID [--replace-local]   leave
          export [--out FILE]   import FILE
        environment: KIDLEDGER_STORE, KIDLEDGER_SERVER
        """
}
