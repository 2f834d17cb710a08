from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView
from rest_framework.routers import DefaultRouter

from .views import BuildViewSet, CaptureViewSet, HeldSymbolsView, ServiceViewSet

router = DefaultRouter()
router.register("services", ServiceViewSet, basename="api-service")
router.register("builds", BuildViewSet, basename="api-build")
router.register("captures", CaptureViewSet, basename="api-capture")

urlpatterns = [
    path("v1/symbols/held/", HeldSymbolsView.as_view(), name="api-held-symbols"),
    path("v1/", include(router.urls)),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
]
