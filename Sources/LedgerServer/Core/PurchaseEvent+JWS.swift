import Foundation
import LedgerCore
import StoreKitJWS

/// A verified App Store transaction (and its renewal info, or the notification that carried
/// them) as the event it is in its purchase's life.
extension PurchaseEvent {
    init(transaction t: JWSTransactionDecodedPayload, renewal r: JWSRenewalInfoDecodedPayload?,
         environment: String, productId: String, signedDate: Int64, key: String, source: String,
         signedTransaction: String, signedRenewalInfo: String?, notification: ResponseBodyV2DecodedPayload? = nil) {
        func ms(_ d: Date?) -> Int64? { d.map(JWSTransactionDecodedPayload.milliseconds) }
        self.init(originalTransactionId: t.originalTransactionId ?? t.transactionId ?? "", environment: environment,
                  productId: productId, expiresAt: ms(t.expiresDate), revokedAt: ms(t.revocationDate),
                  graceUntil: ms(r?.gracePeriodExpiresDate), billingRetry: r?.isInBillingRetryPeriod ?? false,
                  autoRenew: r?.autoRenewStatus.map { $0 == 1 }, appleStatus: notification?.data?.status,
                  type: notification?.notificationType, subtype: notification?.subtype, signedDate: signedDate, key: key,
                  source: source, signedTransaction: signedTransaction, signedRenewalInfo: signedRenewalInfo)
    }
}
