from django.apps import AppConfig


class CapturesConfig(AppConfig):
    name = "perfweb.captures"
    label = "captures"
