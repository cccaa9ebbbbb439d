/// The household's private share, its participants and invitations.
enum SharingRoutes {
    static func register(_ r: inout Router) {}
}
