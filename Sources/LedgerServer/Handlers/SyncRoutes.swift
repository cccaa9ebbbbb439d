/// The change feed, batch push and sync status.
enum SyncRoutes {
    static func register(_ r: inout Router) {}
}
