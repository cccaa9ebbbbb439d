import HTTPServer
import LedgerModel
import LedgerStorageSQLite

/// Everything `kidledger-server serve` can be told.
public struct LedgerAppConfiguration: Sendable {
    /// Registration policy for `POST /v1/accounts`.
    public enum Registration: String, Sendable { case open, closed }

    /// Where `kidledger.sqlite` lives, and the keys (`cursor.key`, `entitlement-keys/`),
    /// with either backend. Default `./data`.
    public var dataDirectory: String
    /// A `postgres://` URL: store everything in that PostgreSQL database instead of SQLite
    /// (builds with the `Postgres` trait). nil (the default): SQLite in `dataDirectory`.
    public var databaseURL: String?
    /// PostgreSQL itself, when `databaseURL` is a connection pooler in transaction mode
    /// (pgbouncer): LISTEN and the migration lock use it, and statements through the pooler
    /// are prepared unnamed with their settings per transaction. nil (the default):
    /// `databaseURL` must reach PostgreSQL itself.
    public var databaseDirectURL: String?
    /// Connections to PostgreSQL per process, and as many worker threads run requests that
    /// use them. Default 16.
    public var databaseConnections: Int = 16
    /// SQLite: how much of the database file each read connection maps into memory
    /// (`PRAGMA mmap_size`; SQLite caps it at 2 GiB), so that reads after a commit are
    /// memory reads, not a `pread` per page. The catch, as SQLite documents: an I/O error on
    /// a mapped page ends the process with SIGBUS instead of an error answer. 0 reads
    /// through `pread` only. Default 2 GiB.
    public var readerMmapBytes: Int = 2 << 30
    /// SQLite: the writer connection's page cache (`PRAGMA cache_size`), enough for the
    /// pages every write touches. Default 32 MiB (SQLite's own default is 2 MiB). At least
    /// 64 KiB is used.
    public var writerCacheBytes: Int = 32 << 20
    /// SQLite: which CPUs the writer thread runs on (`WriterCPU`). Default `.any`: wherever
    /// the scheduler puts it.
    public var writerCPU: WriterCPU = .any
    public var http: HTTPServerConfiguration
    /// Default `.open`.
    public var registration: Registration = .open
    /// App Store bundle id; nil disables the subscription endpoints (503).
    public var bundleId: String?
    /// Product ids that count as Pro.
    public var productIds: [String] = []
    /// Allowed App Store environments. Default `["Production"]`.
    public var environments: [String] = ["Production"]
    /// Trusted root certificate files (DER or PEM). Default: the shipped Apple Root CA - G3.
    public var trustedRootPaths: [String] = []
    /// The app's Apple id (`data.appAppleId` of App Store notifications); required when
    /// `Production` is allowed.
    public var appAppleId: Int64?
    /// Lifetime of an entitlement token, in seconds (never past the end of the state it
    /// states). Default 86400 (24 h); at most 366 days.
    public var entitlementTokenTTL: Int = 86_400
    /// App Store notification requests allowed per client address per minute before 429.
    /// Default 600 (a relay forwards every notification from one address).
    public var notificationsPerMinute: Int = 600
    /// Folder of static files. Default `Public`.
    public var publicDirectory: String = "Public"
    /// The OpenAPI document served at `/openapi.yaml`. Default `openapi.yaml`.
    public var openAPIPath: String = "openapi.yaml"
    /// Failed authentications allowed per client address per minute before 429. Default 30.
    public var authFailuresPerMinute: Int = 30
    /// Most records in one sync push. Default 400.
    public var maxPushRecords: Int = 400
    /// Accounts one client address (an IPv4 address, an IPv6 /64) may register per hour,
    /// in bursts of as many; then 429 `registration_rate_limited`. 0: no limit. Default 20.
    public var registrationsPerHour: Int = 20
    /// Households one account may own; then 409 `too_many_households`. 0: no limit. Default 100.
    public var maxHouseholdsPerAccount: Int = 100
    /// Children one household may hold, archived ones included (children are never
    /// deleted); then 409 `too_many_children`. 0: no limit. Default 100.
    public var maxChildrenPerHousehold: Int = 100
    /// Schedules one child may have (deleted ones do not count). Default 20.
    public var maxSchedulesPerChild: Int = 20
    /// Requests one child's device may make per hour (`POST …/children/{childId}/requests`
    /// with a child token; 429 `rate_limited` past it). 0: no limit.
    public var childRequestsPerHour: Int = 30
    /// Pots one child may have besides its default pot (deleted ones do not count); then 409
    /// `too_many_pots`. 0: no limit. Default 20.
    public var maxPotsPerChild: Int = 20
    /// Seconds between runs of the job that pays due schedules (it also runs at start).
    /// Default 60; 0 runs it only when asked (`LedgerApp.paySchedules`, tests).
    public var scheduleJobInterval: Double = 60
    /// The clock schedules are settled by, in milliseconds since the epoch: when a request
    /// creates, edits or deletes a schedule, and when the job runs. Default the system's;
    /// tests move it.
    public var clock: @Sendable () -> Int64 = { Timestamp.nowMs() }
    /// Pending invitations one account may have received; then 409 `too_many_invitations`.
    /// 0: no limit. Default 50.
    public var maxPendingInvitationsPerInvitee: Int = 50
    /// Pending invitations one account may have sent, over all its households; then 409
    /// `too_many_invitations`. 0: no limit. Default 100.
    public var maxPendingInvitationsPerInviter: Int = 100
    /// Pending invitations one account may have sent to one invitee, over all its
    /// households (so one inviter never holds all of an invitee's slots); then 409
    /// `too_many_invitations` with `scope: inviterForInvitee`. 0: no limit. Default 3.
    public var maxPendingInvitationsPerInviterForInvitee: Int = 3
    /// Invitations to a handle that no account has (or whose account blocked the inviter)
    /// one account may send per minute; then every invitation it sends is 429 `rate_limited`
    /// until the minute is over. 0: no limit. Default 10.
    public var failedHandleLookupsPerMinute: Int = 10
    /// Live (not revoked) device tokens one account may hold; then 409 `too_many_tokens`.
    /// 0: no limit. Default 100.
    public var maxTokensPerAccount: Int = 100
    /// Limits on link-code redemptions and recoveries.
    public var accountAccess = AccountAccessConfiguration()
    /// Whether to print JSON log lines at all (`--quiet` turns them off). Default true.
    public var logging: Bool = true
    /// `debug`, `info` (one access line per request), `warning`, `error`. Default `info`.
    public var logLevel: String = "info"
    /// Peers whose `X-Forwarded-For` is believed: addresses or IPv4 CIDR ranges. Default none.
    public var trustedProxies: [String] = []

    // Identity (`LedgerAppConfiguration+Identity.swift`, docs/identity.md).
    /// Sign in with Apple's client ids (the app's bundle id, a Services id): `apple` is
    /// offered when there is one. Default none.
    public var appleClientIds: [String] = []
    /// Where Apple's key set is read: an https URL or a file. nil (the default): Apple's
    /// published set.
    public var appleJWKS: String?
    /// Other OpenID Connect providers, each `name=N,issuer=URL,audience=A[;A…],jwks=URL|FILE`.
    public var oidcProviders: [String] = []
    /// The app's Sign in with Apple key (team id, key id, `.p8` file): with all three,
    /// authorization codes are exchanged for refresh tokens that are revoked when the
    /// account is deleted. Default none.
    public var appleTeamId: String?
    public var appleKeyId: String?
    public var applePrivateKeyPath: String?
    /// Base URL of Apple's `/auth/token` and `/auth/revoke`. Default `https://appleid.apple.com`.
    public var appleAuthURL: String = "https://appleid.apple.com"
    /// Seconds before a failed Apple revocation is tried again (doubling each time, up to
    /// six hours). Default 60.
    public var appleRevocationRetrySeconds: Double = 60
    /// Seconds between two looks for due Apple revocations. Default 60.
    public var appleRevocationPollSeconds: Double = 60
    /// The notify URLs of the Matrix push gateways devices may register with (the first is
    /// the default). Empty (the default): push is off and its routes answer 404.
    public var pushGateways: [String] = []
    /// Seconds a device waits between two wakes: changes meanwhile fold into the next.
    /// Default 10.
    public var pushMinInterval: Double = 10
    /// Seconds before a wake the gateway could not take is tried again (doubling each
    /// attempt, up to ``pushRetryMaxSeconds``). Default 2.
    public var pushRetrySeconds: Double = 2
    /// Longest delay between two attempts at one wake, in seconds. Default 600.
    public var pushRetryMaxSeconds: Double = 600
    /// Seconds a gateway call may take before it counts as failed. Default 10.
    public var pushTimeout: Double = 10
    /// Longest wait between two looks for due wakes, in seconds (wakes queued by this
    /// process, and commits other processes announce, start a look at once). Default 5.
    public var pushPollSeconds: Double = 5

    public init(dataDirectory: String = "./data", host: String = "127.0.0.1", port: Int = 8080) {
        self.dataDirectory = dataDirectory
        var http = HTTPServerConfiguration()
        http.serverName = "kidledger"
        http.host = host
        http.port = port
        self.http = http
    }

    /// Path of the database file.
    public var databasePath: String { dataDirectory + "/kidledger.sqlite" }
}
