// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "kidledger",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .library(name: "LedgerClient", targets: ["LedgerClient"]),
        .library(name: "LedgerModel", targets: ["LedgerModel"]),
        .library(name: "LedgerClientTesting", targets: ["LedgerClientTesting"]),
        .executable(name: "kidledger-server", targets: ["kidledger-server"]),
        .executable(name: "kidledger", targets: ["kidledger"]),
    ],
    traits: [
        // The PostgreSQL backend (libpq from libpq-dev). Off by default: the default build
        // needs only sqlite3, OpenSSL and zlib.
        .trait(name: "Postgres", description: "PostgreSQL storage backend through libpq"),
        .default(enabledTraits: []),
    ],
    targets: [
        // System libraries, found through pkg-config.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"]), .brew(["sqlite"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "libcrypto",
                       providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib",
                       providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq",
                       providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),

        // Libraries.
        // Byte-writing helpers (`ByteWriter`, `Array.append(literal:)`): no dependencies, so
        // the HTTP layer can share them without knowing the ledger.
        .target(name: "ByteWriting"),
        .target(name: "LedgerModel", dependencies: ["ByteWriting"]),
        .target(name: "SQLiteKit", dependencies: ["CSQLite"]),
        // Server-only storage (the coalescing WAL VFS, database-file syncs): never in the
        // device SDK's dependencies (scripts/check-portability.sh checks it).
        .target(name: "SQLiteServerKit", dependencies: ["SQLiteKit", "CSQLite"]),
        .target(name: "GzipKit", dependencies: ["CZlib"]),
        // Empty unless the Postgres trait is on (its sources are inside `#if Postgres`).
        .target(name: "PostgresKit", dependencies: ["LedgerModel", .target(name: "CLibPQ", condition: .when(traits: ["Postgres"]))]),
        // Small POSIX helpers the HTTP layer and storage share: thread names, resolved paths.
        .target(name: "SystemKit"),
        // Knows no application: depends on no ledger target (HTTPServerTests checks its imports).
        .target(name: "HTTPServer", dependencies: ["GzipKit", "ByteWriting", "SystemKit"]),
        .target(name: "StoreKitJWS", dependencies: ["COpenSSL"]),
        // OpenID Connect ID tokens (Sign in with Apple, operators' providers): key sets, verification.
        .target(name: "IDTokenKit", dependencies: ["LedgerModel", "StoreKitJWS", "COpenSSL"]),

        // The server, one layer per target (docs/architecture.md): the compiler keeps each
        // layer to what it may import.
        // The storage protocol, records and domain errors, the ledger rules written once,
        // and the domain values requests carry into storage: no HTTP, no SQL.
        .target(name: "LedgerCore", dependencies: ["LedgerModel", "COpenSSL", "StoreKitJWS"]),
        // One conformer each: SQL, locking, and how each drives group commit.
        .target(name: "LedgerStorageSQLite",
                dependencies: ["LedgerCore", "LedgerModel", "SQLiteKit", "SQLiteServerKit", "SystemKit"]),
        // Empty unless the Postgres trait is on (its sources are inside `#if Postgres`).
        .target(name: "LedgerStoragePostgres",
                dependencies: ["LedgerCore", "LedgerModel", "SystemKit",
                               .target(name: "PostgresKit", condition: .when(traits: ["Postgres"]))]),
        // Routes with their thread policy, handlers, the HTTP form of domain errors, caches,
        // and the wiring of storage, HTTP and App Store verification.
        .target(name: "LedgerServer",
                dependencies: ["LedgerCore", "LedgerStorageSQLite", "LedgerModel", "HTTPServer", "StoreKitJWS", "COpenSSL",
                               "IDTokenKit", "SystemKit",
                               .target(name: "LedgerStoragePostgres", condition: .when(traits: ["Postgres"]))]),
        .target(name: "LedgerClient", dependencies: ["LedgerModel", "SQLiteKit", "GzipKit"]),
        // Fakes for tests of LedgerClient and of apps (a library of its own, never linked into
        // an app): in-memory and fault-injecting transports, a seeded generator.
        .target(name: "LedgerClientTesting", dependencies: ["LedgerClient", "LedgerModel"]),
        // Keys made in process and tokens signed with them, for IDTokenKit's tests and tools.
        .target(name: "IDTokenKitTesting", dependencies: ["LedgerModel", "StoreKitJWS", "COpenSSL"]),
        // The App Store tests' material: a certificate chain generated with OpenSSL in the test
        // process, and the place of Apple's own files (Tests/Fixtures). Tests only.
        .target(name: "AppStoreTestSupport", dependencies: ["COpenSSL"], path: "Tests/AppStoreTestSupport"),

        // Executables: argument parsing and wiring only.
        .executableTarget(name: "kidledger-server", dependencies: ["LedgerServer", "LedgerStorageSQLite"]),
        .executableTarget(name: "kidledger", dependencies: ["LedgerClient"]),
        // IDTokenKit's verdicts on a file of tokens, for scripts/jwt-peer.sh.
        .executableTarget(name: "idtoken-check", dependencies: ["IDTokenKit", "LedgerModel"]),
        // An app-like program written against CLIENT_API.md only (run by LedgerExampleTests).
        .executableTarget(name: "ledger-app-example", dependencies: ["LedgerClient"], path: "Examples/LedgerAppExample"),
        // bench/propagation.sh: a change on one device reaching another's snapshots() stream.
        .executableTarget(name: "ledger-propagation-bench", dependencies: ["LedgerClient"], path: "bench/propagation"),
        // bench/schedule-job.sh: the schedule payment job over many schedules due at once.
        .executableTarget(name: "schedule-job-bench", dependencies: ["LedgerServer", "LedgerCore", "LedgerModel"],
                          path: "bench/schedule-job"),
        // bench/idtoken.sh: CPU per ID token verification, accepted and refused.
        .executableTarget(name: "idtoken-bench", dependencies: ["IDTokenKit", "IDTokenKitTesting", "LedgerModel"], path: "bench/idtoken"),

        // Tests.
        .testTarget(name: "LedgerModelTests", dependencies: ["LedgerModel"]),
        .testTarget(name: "SQLiteKitTests", dependencies: ["SQLiteKit", "SQLiteServerKit"]),
        .testTarget(name: "PostgresKitTests",
                    dependencies: [.target(name: "PostgresKit", condition: .when(traits: ["Postgres"]))]),
        .testTarget(name: "HTTPServerTests", dependencies: ["HTTPServer", "GzipKit", "SystemKit"]),
        .testTarget(name: "StoreKitJWSTests", dependencies: ["StoreKitJWS", "COpenSSL", "AppStoreTestSupport"]),
        .testTarget(name: "IDTokenKitTests", dependencies: ["IDTokenKit", "IDTokenKitTesting", "LedgerModel", "StoreKitJWS"]),
        .testTarget(name: "LedgerServerTests",
                    dependencies: ["LedgerServer", "LedgerCore", "LedgerStorageSQLite", "LedgerModel", "SQLiteKit", "SQLiteServerKit",
                                   "HTTPServer", "AppStoreTestSupport", "IDTokenKit", "IDTokenKitTesting", "StoreKitJWS",
                                   "LedgerClientTesting",
                                   .target(name: "LedgerStoragePostgres", condition: .when(traits: ["Postgres"])),
                                   .target(name: "PostgresKit", condition: .when(traits: ["Postgres"]))]),
        .testTarget(name: "LedgerClientTests", dependencies: ["LedgerClient", "LedgerClientTesting", "LedgerServer", "LedgerModel", "HTTPServer",
                                                             "AppStoreTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
