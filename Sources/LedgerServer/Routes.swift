/// Every route of the API, in one table.
enum Routes {
    static func make() -> Router {
        var r = Router()
        OperationsRoutes.register(&r)
        AccountRoutes.register(&r)
        HouseholdRoutes.register(&r)
        ChildRoutes.register(&r)
        TransactionRoutes.register(&r)
        SharingRoutes.register(&r)
        SyncRoutes.register(&r)
        SubscriptionRoutes.register(&r)
        NotificationRoutes.register(&r)
        AuthRoutes.register(&r)
        IdentityRoutes.register(&r)
        AccountAccessRoutes.register(&r)
        return r
    }
}
