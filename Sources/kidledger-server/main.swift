import Foundation
import HTTPServer
import LedgerServer
import LedgerStorageSQLite

/// `kidledger-server` — argument parsing and wiring only.
let usage = """
usage: kidledger-server serve [--host H] [--port P] [--data-dir DIR] [--database-url postgres://…]
                              [--database-direct-url postgres://…]
                              [--database-connections N] [--registration open|closed]
                              [--bundle-id ID] [--product-id ID]... [--environment Production|Sandbox]...
                              [--trusted-root FILE]... [--app-apple-id N] [--entitlement-token-ttl S]
                              [--notifications-per-minute N] [--public-dir DIR] [--openapi FILE]
                              [--max-body-bytes N] [--max-head-bytes N] [--max-connections N]
                              [--max-connections-per-address N] [--body-memory-limit BYTES]
                              [--header-timeout S] [--body-timeout S] [--idle-timeout S] [--shutdown-timeout S]
                              [--event-loops N] [--read-mmap-mb N] [--writer-cache-mb N] [--writer-cpu auto|any|LIST]
                              [--log-level debug|info|warning|error]
                              [--trusted-proxies ADDR[,ADDR|CIDR]...] [--auth-failures-per-minute N] [--quiet]
                              [--registrations-per-hour N] [--max-households-per-account N]
                              [--max-children-per-household N] [--max-schedules-per-child N] [--max-pots-per-child N]
                              [--child-requests-per-hour N]
                              [--schedule-job-interval SECONDS] [--max-pending-invitations-per-invitee N]
                              [--max-pending-invitations-per-inviter N]
                              [--max-pending-invitations-per-inviter-for-invitee N]
                              [--failed-handle-lookups-per-minute N] [--tokens-per-account N]
                              [--apple-client-id ID]... [--apple-jwks URL|FILE]
                              [--oidc-provider name=N,issuer=URL,audience=A[;A...],jwks=URL|FILE]...
                              [--apple-team-id ID --apple-key-id ID --apple-private-key FILE.p8] [--apple-auth-url URL]
                              [--link-code-failures-per-minute N] [--link-code-failures-per-code N]
                              [--recovery-failures-per-minute N] [--recovery-failures-per-handle-per-hour N]
                              [--push-gateway URL]... [--push-min-interval S] [--push-retry-seconds S]
                              [--push-retry-max-seconds S] [--push-timeout S] [--push-poll-seconds S]
       kidledger-server accounts create --handle H --name N [--device-name D] [--data-dir DIR]
       kidledger-server backup --to FILE [--data-dir DIR]   (SQLite; for PostgreSQL it prints how to use pg_dump)
       kidledger-server check [--data-dir DIR | --database-url postgres://…]
       kidledger-server restore --from FILE [--data-dir DIR]   (SQLite: installs a backup; the server must be stopped)
       kidledger-server rewound [--data-dir DIR | --database-url postgres://…]   (after pg_restore, PITR or a failover)
       kidledger-server migrate --database-url postgres://…   (builds with the Postgres trait)
Every flag can also be set as an environment variable: KIDLEDGER_HOST, KIDLEDGER_PORT,
KIDLEDGER_DATA_DIR, KIDLEDGER_DATABASE_URL (PostgreSQL instead of SQLite; builds with the Postgres trait),
KIDLEDGER_DATABASE_DIRECT_URL (PostgreSQL itself when KIDLEDGER_DATABASE_URL is a pgbouncer in transaction mode),
KIDLEDGER_DATABASE_CONNECTIONS (default 16), KIDLEDGER_REGISTRATION, KIDLEDGER_BUNDLE_ID, KIDLEDGER_PRODUCT_ID (comma-separated),
KIDLEDGER_ENVIRONMENT (comma-separated), KIDLEDGER_TRUSTED_ROOT (comma-separated), KIDLEDGER_APP_APPLE_ID
(required with --bundle-id when Production is allowed), KIDLEDGER_ENTITLEMENT_TOKEN_TTL (seconds, default 86400),
KIDLEDGER_NOTIFICATIONS_PER_MINUTE (default 600), KIDLEDGER_PUBLIC_DIR,
KIDLEDGER_OPENAPI, KIDLEDGER_MAX_BODY_BYTES, KIDLEDGER_MAX_HEAD_BYTES, KIDLEDGER_MAX_CONNECTIONS,
KIDLEDGER_MAX_CONNECTIONS_PER_ADDRESS (0: no limit),
KIDLEDGER_BODY_MEMORY_LIMIT (bytes all request bodies being received may hold together, default 268435456;
past it a body is answered 503 with Retry-After; at least the body limit),
KIDLEDGER_HEADER_TIMEOUT, KIDLEDGER_BODY_TIMEOUT, KIDLEDGER_IDLE_TIMEOUT, KIDLEDGER_SHUTDOWN_TIMEOUT (seconds),
KIDLEDGER_EVENT_LOOPS, KIDLEDGER_READ_MMAP_MB (SQLite: MiB of the database each read connection maps, default 2048, 0: none),
KIDLEDGER_WRITER_CACHE_MB (SQLite: the writer's page cache in MiB, default 32),
KIDLEDGER_WRITER_CPU (SQLite: any, the default, leaves the writer thread to the scheduler; auto keeps it on the CPUs
that take the data disk's completion interrupts when those are some but not all of the process's; or a CPU list such as 1 or 0-3),
KIDLEDGER_LOG_LEVEL, KIDLEDGER_TRUSTED_PROXIES (comma-separated),
KIDLEDGER_AUTH_FAILURES_PER_MINUTE, KIDLEDGER_REGISTRATIONS_PER_HOUR, KIDLEDGER_MAX_HOUSEHOLDS_PER_ACCOUNT,
KIDLEDGER_MAX_CHILDREN_PER_HOUSEHOLD, KIDLEDGER_MAX_SCHEDULES_PER_CHILD (default 20),
KIDLEDGER_CHILD_REQUESTS_PER_HOUR (requests one child's device may make an hour, default 30; 0: no limit),
KIDLEDGER_SCHEDULE_JOB_INTERVAL (seconds between runs of the job paying due schedules, default 60; 0: at start only),
KIDLEDGER_MAX_PENDING_INVITATIONS_PER_INVITEE,
KIDLEDGER_MAX_PENDING_INVITATIONS_PER_INVITER, KIDLEDGER_MAX_PENDING_INVITATIONS_PER_INVITER_FOR_INVITEE (default 3),
KIDLEDGER_FAILED_HANDLE_LOOKUPS_PER_MINUTE (default 10), KIDLEDGER_TOKENS_PER_ACCOUNT (default 100)
(0: no limit), KIDLEDGER_APPLE_CLIENT_IDS (comma-separated; Sign in with Apple is offered when set),
KIDLEDGER_APPLE_JWKS (default Apple's published key set), KIDLEDGER_OIDC_PROVIDERS (one spec per line, or specs
separated by |), KIDLEDGER_APPLE_TEAM_ID, KIDLEDGER_APPLE_KEY_ID, KIDLEDGER_APPLE_PRIVATE_KEY (all three: Apple
tokens are revoked when an account is deleted), KIDLEDGER_APPLE_AUTH_URL (default https://appleid.apple.com),
KIDLEDGER_LINK_CODE_FAILURES_PER_MINUTE (per client address, default 10), KIDLEDGER_LINK_CODE_FAILURES_PER_CODE (default 10),
KIDLEDGER_RECOVERY_FAILURES_PER_MINUTE (per client address, default 10), KIDLEDGER_RECOVERY_FAILURES_PER_HANDLE_PER_HOUR (default 10)
(0: no limit), KIDLEDGER_PUSH_GATEWAYS (comma-separated notify URLs of Matrix push gateways; the first is the default;
push is off without one), KIDLEDGER_PUSH_MIN_INTERVAL (seconds between two wakes of one device, default 10),
KIDLEDGER_PUSH_RETRY_SECONDS (first retry of a failed wake, doubling, default 2), KIDLEDGER_PUSH_RETRY_MAX_SECONDS
(default 600), KIDLEDGER_PUSH_TIMEOUT (seconds per gateway call, default 10), KIDLEDGER_PUSH_POLL_SECONDS (default 5).
An empty variable counts as unset.
"""

func fail(_ message: String, code: Int32 = 2) -> Never {
    FileHandle.standardError.write(Data(("kidledger-server: " + message + "\n").utf8))
    exit(code)
}

struct Options {
    var single: [String: String] = [:]
    var multi: [String: [String]] = [:]
    var flags: Set<String> = []

    static let multiNames: Set<String> = ["product-id", "environment", "trusted-root", "trusted-proxies", "apple-client-id",
                                          "oidc-provider", "push-gateway"]
    static let flagNames: Set<String> = ["quiet", "help"]

    init(_ args: ArraySlice<String>, allowed: Set<String>) {
        var it = args.makeIterator()
        while let a = it.next() {
            guard a.hasPrefix("--") else { fail("unexpected argument \(a)\n\(usage)") }
            var name = String(a.dropFirst(2))
            var value: String?
            if let eq = name.firstIndex(of: "=") {
                value = String(name[name.index(after: eq)...])
                name = String(name[..<eq])
            }
            guard allowed.contains(name) || name == "help" else { fail("unknown option --\(name)\n\(usage)") }
            if Options.flagNames.contains(name) { flags.insert(name); continue }
            guard let v = value ?? it.next() else { fail("--\(name) needs a value") }
            if Options.multiNames.contains(name) { multi[name, default: []].append(v) } else { single[name] = v }
        }
        if flags.contains("help") { print(usage); exit(0) }
    }

    /// The flag's value, else its environment variable; an empty variable counts as unset.
    func value(_ name: String) -> String? {
        if let v = single[name] { return v }
        let env = ProcessInfo.processInfo.environment["KIDLEDGER_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
        return env?.isEmpty == false ? env : nil
    }

    func values(_ name: String) -> [String] {
        if let v = multi[name] { return v.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }.filter { !$0.isEmpty } }
        let env = ProcessInfo.processInfo.environment["KIDLEDGER_" + name.uppercased().replacingOccurrences(of: "-", with: "_")]
        return env.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } } ?? []
    }

    /// A repeatable flag's values as given (an `--oidc-provider` spec holds commas), else the
    /// environment variable `variable` split at newlines and `|` (neither appears in a spec).
    func specs(_ name: String, variable: String) -> [String] {
        if let v = multi[name] { return v }
        let env = ProcessInfo.processInfo.environment[variable] ?? ""
        return env.split(whereSeparator: { $0 == "\n" || $0 == "|" || $0 == "\r\n" })
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    func int(_ name: String) -> Int? {
        guard let v = value(name) else { return nil }
        guard let i = Int(v), i >= 0 else { fail("--\(name) must be a non-negative integer, got \(v)") }
        return i
    }

    func positiveInt(_ name: String) -> Int? {
        guard let v = value(name) else { return nil }
        guard let i = Int(v), i >= 1 else { fail("--\(name) must be a positive integer, got \(v)") }
        return i
    }

    /// A duration in seconds (fractions allowed), greater than zero.
    func seconds(_ name: String) -> Double? {
        guard let v = value(name) else { return nil }
        guard let d = Double(v), d.isFinite, d > 0 else { fail("--\(name) must be a positive number of seconds, got \(v)") }
        return d
    }
}

func configuration(_ o: Options) -> LedgerAppConfiguration {
    var c = LedgerAppConfiguration(dataDirectory: o.value("data-dir") ?? "./data",
                                   host: o.value("host") ?? "127.0.0.1", port: o.int("port") ?? 8080)
    if c.http.port > 65535 { fail("--port must be 0…65535") }
    if let url = o.value("database-url") {
        if let problem = LedgerAppConfiguration.databaseURLProblem(url) { fail("--database-url " + problem) }
        c.databaseURL = url
    }
    if let url = o.value("database-direct-url") {
        if let problem = LedgerAppConfiguration.databaseURLProblem(url) { fail("--database-direct-url " + problem) }
        guard c.databaseURL != nil else { fail("--database-direct-url needs --database-url (the pooler's address)") }
        c.databaseDirectURL = url
    }
    if let n = o.positiveInt("database-connections") { c.databaseConnections = n }
    if let r = o.value("registration") {
        guard let reg = LedgerAppConfiguration.Registration(rawValue: r) else { fail("--registration must be open or closed") }
        c.registration = reg
    }
    c.bundleId = o.value("bundle-id")
    c.productIds = o.values("product-id")
    let envs = o.values("environment")
    if !envs.isEmpty {
        for e in envs where e != "Production" && e != "Sandbox" { fail("--environment must be Production or Sandbox, got \(e)") }
        c.environments = envs
    }
    c.trustedRootPaths = o.values("trusted-root")
    if let v = o.value("app-apple-id") {
        guard let id = Int64(v), id > 0 else { fail("--app-apple-id must be the app's numeric Apple id, got \(v)") }
        c.appAppleId = id
    }
    if let n = o.positiveInt("entitlement-token-ttl") {
        guard n <= 366 * 86_400 else { fail("--entitlement-token-ttl is at most 31622400 seconds (366 days)") }
        c.entitlementTokenTTL = n
    }
    if let n = o.positiveInt("notifications-per-minute") { c.notificationsPerMinute = n }
    if let p = o.value("public-dir") { c.publicDirectory = p }
    if let p = o.value("openapi") { c.openAPIPath = p }
    if let n = o.int("max-body-bytes") { c.http.maxBodyBytes = n }
    if let n = o.positiveInt("max-head-bytes") { c.http.maxHeadBytes = n }
    if let n = o.positiveInt("max-connections") { c.http.maxConnections = n }
    if let n = o.int("max-connections-per-address") { c.http.maxConnectionsPerAddress = n }
    if let n = o.positiveInt("body-memory-limit") { c.http.maxBufferedBodyBytes = n }
    guard c.http.maxBufferedBodyBytes >= c.http.maxBodyBytes else {
        fail("--body-memory-limit (\(c.http.maxBufferedBodyBytes)) must be at least --max-body-bytes (\(c.http.maxBodyBytes))")
    }
    if let t = o.seconds("header-timeout") { c.http.headerTimeout = t }
    if let t = o.seconds("body-timeout") { c.http.bodyTimeout = t }
    if let t = o.seconds("idle-timeout") { c.http.idleTimeout = t }
    if let t = o.seconds("shutdown-timeout") { c.http.shutdownDeadline = t }
    if let n = o.int("event-loops") { c.http.eventLoops = n }
    if let n = o.int("read-mmap-mb") { c.readerMmapBytes = min(n, 1 << 20) << 20 }
    if let n = o.positiveInt("writer-cache-mb") {
        guard n <= 65_536 else { fail("--writer-cache-mb is at most 65536 (64 GiB)") }
        c.writerCacheBytes = n << 20
    }
    if let v = o.value("writer-cpu") {
        guard let choice = WriterCPU(v) else { fail("--writer-cpu must be auto, any or a CPU list such as 1 or 0-3, got \(v)") }
        if let problem = choice.problem() { fail("--writer-cpu: " + problem) }
        c.writerCPU = choice
    }
    if o.flags.contains("quiet") { c.logging = false }
    if let l = o.value("log-level") {
        guard ["debug", "info", "warning", "error"].contains(l) else { fail("--log-level must be debug, info, warning or error") }
        c.logLevel = l
    }
    c.trustedProxies = o.values("trusted-proxies")
    if let bad = c.invalidTrustedProxies.first {
        fail("--trusted-proxies takes IPv4 or IPv6 addresses or CIDR networks (such as 10.0.0.0/8 or fd00::/8), got \(bad)")
    }
    if let n = o.int("auth-failures-per-minute") {
        guard n >= 1 else { fail("--auth-failures-per-minute must be at least 1") }
        c.authFailuresPerMinute = n
    }
    if let n = o.int("registrations-per-hour") { c.registrationsPerHour = n }
    if let n = o.int("max-households-per-account") { c.maxHouseholdsPerAccount = n }
    if let n = o.int("max-children-per-household") { c.maxChildrenPerHousehold = n }
    if let n = o.int("max-schedules-per-child") { c.maxSchedulesPerChild = n }
    if let n = o.int("max-pots-per-child") { c.maxPotsPerChild = n }
    if let n = o.int("child-requests-per-hour") { c.childRequestsPerHour = n }
    if let n = o.int("schedule-job-interval") { c.scheduleJobInterval = Double(max(0, n)) }
    if let n = o.int("max-pending-invitations-per-invitee") { c.maxPendingInvitationsPerInvitee = n }
    if let n = o.int("max-pending-invitations-per-inviter") { c.maxPendingInvitationsPerInviter = n }
    if let n = o.int("max-pending-invitations-per-inviter-for-invitee") { c.maxPendingInvitationsPerInviterForInvitee = n }
    if let n = o.int("failed-handle-lookups-per-minute") { c.failedHandleLookupsPerMinute = n }
    if let n = o.int("tokens-per-account") { c.maxTokensPerAccount = n }
    // The environment variable of --apple-client-id is plural, like the list it holds.
    c.appleClientIds = o.multi["apple-client-id"] != nil ? o.values("apple-client-id") : o.values("apple-client-ids")
    c.appleJWKS = o.value("apple-jwks")
    c.oidcProviders = o.specs("oidc-provider", variable: "KIDLEDGER_OIDC_PROVIDERS")
    c.appleTeamId = o.value("apple-team-id")
    c.appleKeyId = o.value("apple-key-id")
    c.applePrivateKeyPath = o.value("apple-private-key")
    if let url = o.value("apple-auth-url") { c.appleAuthURL = url }
    if let problem = c.identityProblem { fail(problem) }
    if let n = o.int("link-code-failures-per-minute") { c.accountAccess.linkCodeFailuresPerMinute = n }
    if let n = o.int("link-code-failures-per-code") { c.accountAccess.linkCodeFailuresPerCode = n }
    if let n = o.int("recovery-failures-per-minute") { c.accountAccess.recoveryFailuresPerMinute = n }
    if let n = o.int("recovery-failures-per-handle-per-hour") { c.accountAccess.recoveryFailuresPerHandlePerHour = n }
    // The environment variable of --push-gateway is plural, like the list it holds.
    c.pushGateways = o.multi["push-gateway"] != nil ? o.values("push-gateway") : o.values("push-gateways")
    if let v = o.value("push-min-interval") {
        guard let d = Double(v), d.isFinite, d >= 0 else { fail("--push-min-interval must be zero or more seconds, got \(v)") }
        c.pushMinInterval = d
    }
    if let s = o.seconds("push-retry-seconds") { c.pushRetrySeconds = s }
    if let s = o.seconds("push-retry-max-seconds") { c.pushRetryMaxSeconds = s }
    if let s = o.seconds("push-timeout") { c.pushTimeout = s }
    if let s = o.seconds("push-poll-seconds") { c.pushPollSeconds = s }
    if let problem = c.pushProblem { fail(problem) }
    return c
}

/// glibc's `mallopt` (malloc.h is not part of the Glibc module).
@_silgen_name("mallopt") private func mallopt(_ parameter: Int32, _ value: Int32) -> Int32

/// Memory freed on one thread and allocated again on another (request bodies, rows,
/// answers built after each commit) would otherwise go back to the kernel and fault in
/// again many times a second — the writer thread spent an eighth of its time in the
/// madvise calls that returns it. Keep up to 64 MiB of freed heap per arena.
func keepFreedHeap() {
    _ = mallopt(-1 /* M_TRIM_THRESHOLD */, 64 << 20)
    _ = mallopt(-2 /* M_TOP_PAD */, 16 << 20)
}

let serveOptions: Set<String> = ["host", "port", "data-dir", "database-url", "database-direct-url", "database-connections", "registration", "bundle-id", "product-id", "environment",
                                 "trusted-root", "app-apple-id", "entitlement-token-ttl", "notifications-per-minute", "public-dir", "openapi", "max-body-bytes", "event-loops", "read-mmap-mb", "writer-cache-mb", "writer-cpu", "quiet", "log-level",
                                 "trusted-proxies", "auth-failures-per-minute", "max-head-bytes", "max-connections",
                                 "max-connections-per-address", "body-memory-limit",
                                 "header-timeout", "body-timeout", "idle-timeout", "shutdown-timeout",
                                 "registrations-per-hour", "max-households-per-account", "max-children-per-household",
                                 "max-schedules-per-child", "max-pots-per-child", "child-requests-per-hour", "schedule-job-interval",
                                 "max-pending-invitations-per-invitee", "max-pending-invitations-per-inviter",
                                 "max-pending-invitations-per-inviter-for-invitee", "failed-handle-lookups-per-minute",
                                 "tokens-per-account", "apple-client-id", "apple-jwks", "oidc-provider", "apple-team-id",
                                 "apple-key-id", "apple-private-key", "apple-auth-url",
                                 "link-code-failures-per-minute", "link-code-failures-per-code",
                                 "recovery-failures-per-minute", "recovery-failures-per-handle-per-hour",
                                 "push-gateway", "push-gateways", "push-min-interval", "push-retry-seconds",
                                 "push-retry-max-seconds", "push-timeout", "push-poll-seconds"]
let args = CommandLine.arguments.dropFirst()
guard let command = args.first else { print(usage); exit(2) }

do {
    switch command {
    case "serve":
        let o = Options(args.dropFirst(), allowed: serveOptions)
        keepFreedHeap()
        // Before the configuration: the default --max-connections follows the descriptor limit.
        HTTPServerConfiguration.raiseDescriptorLimit()
        TerminationSignal.install()
        let app = try LedgerApp(configuration: configuration(o))
        try app.start()
        _ = TerminationSignal.wait()
        app.stop()
        exit(0)
    case "accounts":
        guard args.dropFirst().first == "create" else { fail("usage: kidledger-server accounts create --handle H --name N") }
        let o = Options(args.dropFirst(2), allowed: ["handle", "name", "device-name", "data-dir"])
        guard let handle = o.single["handle"], let name = o.single["name"] else { fail("accounts create needs --handle and --name") }
        print(try AdminCommands.createAccount(configuration(o), handle: handle, name: name, deviceName: o.single["device-name"] ?? "admin"))
    case "backup":
        let o = Options(args.dropFirst(), allowed: ["to", "data-dir", "database-url"])
        let c = configuration(o)
        // Over PostgreSQL it answers how to back up with pg_dump instead.
        if c.databaseURL != nil { try AdminCommands.backup(c, to: o.single["to"] ?? "") }
        guard let to = o.single["to"] else { fail("backup needs --to FILE") }
        try AdminCommands.backup(c, to: to)
        print(#"{"event":"backup","to":"\#(to)"}"#)
    case "restore":
        let o = Options(args.dropFirst(), allowed: ["from", "data-dir", "database-url"])
        guard let from = o.single["from"] else { fail("restore needs --from FILE (a file written by `kidledger-server backup`)") }
        print(try AdminCommands.restore(configuration(o), from: from))
    case "rewound":
        let o = Options(args.dropFirst(), allowed: ["data-dir", "database-url"])
        print(try AdminCommands.rewound(configuration(o)))
    case "check":
        let o = Options(args.dropFirst(), allowed: ["data-dir", "database-url"])
        // Every outcome is one JSON report, failures to read the database included.
        let report: AdminCommands.CheckReport
        do { report = try AdminCommands.check(configuration(o)) } catch {
            report = AdminCommands.CheckReport(problems: ["check: \(error)"], children: 0, transactions: 0)
        }
        print(report.json)
        exit(report.ok ? 0 : 1)
    case "migrate":
        let o = Options(args.dropFirst(), allowed: ["database-url"])
        guard let url = o.value("database-url") else { fail("migrate needs --database-url (or KIDLEDGER_DATABASE_URL)") }
        if let problem = LedgerAppConfiguration.databaseURLProblem(url) { fail("--database-url " + problem) }
        print(try AdminCommands.migrate(databaseURL: url))
    case "help", "--help", "-h":
        print(usage)
    default:
        fail("unknown command \(command)\n\(usage)")
    }
} catch {
    fail(String(describing: error), code: 1)
}
