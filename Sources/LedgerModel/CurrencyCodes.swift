/// The ISO 4217 codes a household's `currency` may take: the currencies of List One in
/// circulation. The funds codes (BOV, CHE, CHW, CLF, COU, MXV, USN, UYI, UYW), precious
/// metals (XAG, XAU, XPD, XPT), bond-market and drawing-right units (XBA…XBD, XDR, XSU,
/// XUA), the testing code XTS and "no currency" XXX are not money a ledger is kept in.
/// Withdrawn codes are left out: HRK (2023), ZWL (replaced by ZWG, 2024), ANG (replaced
/// by XCG, 2025). When ISO adds or withdraws a currency, change this list.
public enum CurrencyCodes {
    public static let active: Set<String> = Set([
        "AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BGN BHD BIF BMD",
        "BND BOB BRL BSD BTN BWP BYN BZD CAD CDF CHF CLP CNY COP CRC CUC",
        "CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS",
        "GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD",
        "JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL",
        "LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD",
        "NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD",
        "RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS SRD SSP STN SVC",
        "SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD UYU UZS",
        "VED VES VND VUV WST XAF XCD XCG XOF XPF YER ZAR ZMW ZWG",
    ].joined(separator: " ").split(separator: " ").map(String.init))
}
