import Foundation
import LedgerClient

extension Ledger {
    /// Opens (creating when absent) the ledger stored at `store` with its requests going to
    /// `transport`, a server played in the test's own process, instead of over the network.
    /// Everything else is as `open(store:server:credentials:)`.
    ///
    /// ```swift
    /// import LedgerClient
    /// import LedgerClientTesting
    ///
    /// let offline = InMemoryTransport { _ in throw URLError(.notConnectedToInternet) }
    /// let ledger = try await Ledger.open(store: url, credentials: InMemoryCredentialStore(token: "kl_test"),
    ///                                    transport: offline)
    /// ```
    public static func open(store: URL, credentials: any CredentialStore, transport: InMemoryTransport) async throws -> Ledger {
        try await open(store: store, server: nil, credentials: credentials, transport: transport, options: Options())
    }

    /// Opens (creating when absent) the ledger stored at `store` with its requests going through
    /// `transport`, which loses some of them or all (`FaultInjectingTransport.faults`).
    /// Everything else is as `open(store:server:credentials:)`.
    public static func open(store: URL, credentials: any CredentialStore, transport: FaultInjectingTransport) async throws -> Ledger {
        try await open(store: store, server: nil, credentials: credentials, transport: transport, options: Options())
    }
}
