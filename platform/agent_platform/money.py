"""Amounts of money: exact decimals in, integer minor units stored, ISO 4217.

A value never passes through a float: the API takes and gives it as a
decimal string ("1234.50"), it is parsed with `decimal` and kept as an
integer count of the currency's minor unit (cents, yen, fils).

The codes are ISO 4217's active list (as amended to 2025) with each one's
minor-unit exponent. Codes without a minor unit (precious metals, SDR,
testing codes such as XAU, XDR, XTS, XXX) are left out: they are not money
a deal is valued in.
"""

import re
from decimal import Decimal

_EXPONENT_0 = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX UYI VND VUV XAF XOF XPF"
_EXPONENT_3 = "BHD IQD JOD KWD LYD OMR TND"
_EXPONENT_4 = "CLF UYW"
_EXPONENT_2 = (
    "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL BSD "
    "BTN BWP BYN BZD CAD CDF CHE CHF CHW CNY COP COU CRC CUP CVE CZK DKK DOP DZD EGP "
    "ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR "
    "JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA MKD MMK MNT MOP MRU "
    "MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP PKR PLN QAR "
    "RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS "
    "TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG"
)

EXPONENTS = {
    code: exponent
    for exponent, codes in ((0, _EXPONENT_0), (2, _EXPONENT_2), (3, _EXPONENT_3), (4, _EXPONENT_4))
    for code in codes.split()
}
CURRENCIES = tuple(sorted(EXPONENTS))

# Up to 15 digits in minor units: a sum over 2**40 of them still fits SQLite's
# 64-bit integers when summed in two halves (see models/opportunities.py).
MAX_MINOR = 10**15 - 1
# How a value is written: digits, optionally a point and more digits.
DECIMAL_PATTERN = r"^[0-9]{1,15}(\.[0-9]{1,4})?$"
_DECIMAL = re.compile(DECIMAL_PATTERN)


class MoneyError(ValueError):
    """What is wrong with a value, in words for a 400."""


def to_minor(text, currency):
    """The decimal string `text` in `currency` as an integer of minor units."""
    exponent = EXPONENTS[currency]
    if not isinstance(text, str) or not _DECIMAL.match(text):
        raise MoneyError('must be a decimal number written as a string, e.g. "1234.50"')
    amount = Decimal(text)
    if -amount.as_tuple().exponent > exponent:
        raise MoneyError(f"{currency} has {exponent} decimal places; {text} has more")
    minor = int(amount.scaleb(exponent))
    if minor > MAX_MINOR:
        raise MoneyError(f"must be at most {from_minor(MAX_MINOR, currency)}")
    return minor


def from_minor(minor, currency):
    """Integer minor units as the decimal string of `currency` ("1234.50")."""
    exponent = EXPONENTS[currency]
    return str(Decimal(minor).scaleb(-exponent).quantize(Decimal(1).scaleb(-exponent)))


def weighted(minor, percent):
    """`percent`% of `minor` units, exact, rounded half-even to a minor unit."""
    return int((Decimal(minor) * percent / 100).to_integral_value())
