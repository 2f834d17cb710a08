"""Security headers Django does not set by itself."""


class ContentSecurityPolicyMiddleware:
    """No inline scripts or styles anywhere: capture data (function names, comm names)
    comes from uploaded files, so the policy is the second line behind escaping."""

    # styles may be inline: the charts library writes its own <style>; scripts may not
    POLICY = ("default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
              "img-src 'self' data: blob:; "
              "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; "
              "frame-ancestors 'none'")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        response.setdefault("Content-Security-Policy", self.POLICY)
        return response
