"""{% webhook_card service %}: the service page's webhook settings and delivery log."""
from django import template

from ..models import Webhook, WebhookDelivery
from ..webhook_transport import shown_url

register = template.Library()


def deliveries_of(service, limit: int = 20):
    """The service page's delivery log: the latest attempts, newest first."""
    return WebhookDelivery.objects.filter(
        notification__webhook__service=service).select_related(
        "notification__capture__build").order_by("-at", "-attempt")[:limit]


@register.inclusion_tag("captures/_webhook.html", takes_context=True)
def webhook_card(context, service):
    hook = Webhook.objects.select_related("created_by").filter(service=service).first()
    return {"service": service, "webhook": hook,
            "shown_url": shown_url(hook.url) if hook else "",
            "deliveries": list(deliveries_of(service)) if hook else [],
            "csrf_token": context.get("csrf_token")}
