"""The service page's webhook form: any member of the service's team sets or removes the
URL (and the optional signing secret); others get 404, as for everything of a team."""
from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from . import access
from .models import Webhook
from .webhook_transport import InvalidWebhook, check_url, shown_url

MAX_SECRET = 200


@login_required
@require_POST
def service_webhook(request, pk: int):
    service = get_object_or_404(access.services_of(request.user), pk=pk)
    back = redirect(f"{service.get_absolute_url()}#webhook")
    if request.POST.get("action") == "remove":
        gone, _ = Webhook.objects.filter(service=service).delete()
        messages.info(request, "Webhook removed, with its delivery log." if gone else
                      "This service has no webhook.")
        return back
    secret = request.POST.get("secret", "")
    try:
        url = check_url(request.POST.get("url", ""), settings.PERFWEB_WEBHOOK_ALLOW_PRIVATE)
        if len(secret) > MAX_SECRET:
            raise InvalidWebhook(f"the secret is longer than {MAX_SECRET} characters")
    except InvalidWebhook as e:
        messages.error(request, f"Webhook not saved: {e}.")
        return back
    Webhook.objects.update_or_create(service=service, defaults={
        "url": url, "secret": secret, "created_by": request.user,
        "site_url": request.build_absolute_uri("/")})
    messages.info(request, f"Webhook saved: regression verdicts of {service.name} are "
                           f"POSTed to {shown_url(url)}"
                           f"{', signed' if secret else ''}.")
    return back
