/// The owner's App Store subscription and the household's entitlement.
enum SubscriptionRoutes {
    static func register(_ r: inout Router) {}
}
