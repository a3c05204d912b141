"""Errors the service raises on purpose. No Flask here: services raise these,
and the API layer renders every one of them the same way."""


class ApiError(Exception):
    """An error with its stable code, a human message and its HTTP status."""

    status = 400
    code = "BAD_REQUEST"

    def __init__(self, message, code=None, status=None, headers=None):
        super().__init__(message)
        self.message = message
        self.code = code or self.code
        self.status = status or self.status
        self.headers = headers or {}


class ValidationError(ApiError):
    status = 400
    code = "VALIDATION_ERROR"

    def __init__(self, field, problem, code=None):
        super().__init__(f"{field}: {problem}", code=code)
        self.field = field


class Unauthorized(ApiError):
    status = 401
    code = "UNAUTHORIZED"


class Forbidden(ApiError):
    status = 403
    code = "FORBIDDEN"


class NotFound(ApiError):
    status = 404
    code = "NOT_FOUND"


class Conflict(ApiError):
    status = 409
    code = "CONFLICT"


class PayloadTooLarge(ApiError):
    status = 413
    code = "PAYLOAD_TOO_LARGE"

    def __init__(self, limit):
        super().__init__(f"The request body exceeds the limit of {limit} bytes.")


class UnsupportedMediaType(ApiError):
    status = 415
    code = "UNSUPPORTED_MEDIA_TYPE"


class RateLimited(ApiError):
    status = 429
    code = "RATE_LIMIT_EXCEEDED"


class StorageUnavailable(ApiError):
    """The database cannot take writes (a full disk, a read-only file): the
    operator's to fix, after which the same request succeeds."""

    status = 503
    code = "STORAGE_UNAVAILABLE"
    retry_after_seconds = 30

    def __init__(self, cause):
        super().__init__(
            f"The service cannot store anything just now ({cause}); try again later.",
            headers={"Retry-After": str(self.retry_after_seconds)},
        )
