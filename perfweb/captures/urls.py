from django.urls import path

from . import views

urlpatterns = [
    path("", views.home, name="home"),
    path("upload/", views.upload, name="upload"),
    path("captures/<int:pk>/", views.capture_detail, name="capture"),
    path("captures/<int:pk>/status.json", views.capture_status, name="capture-status"),
    path("captures/<int:pk>/result.json", views.capture_result, name="capture-result"),
    path("captures/<int:pk>/download/", views.capture_download, name="capture-download"),
    path("captures/<int:pk>/folded/", views.capture_folded, name="capture-folded"),
    path("captures/<int:pk>/retry/", views.capture_retry, name="capture-retry"),
    path("builds/<int:pk>/", views.build_detail, name="build"),
    path("builds/<int:pk>/reanalyze/", views.build_reanalyze, name="build-reanalyze"),
    path("symbols/<int:pk>/download/", views.symbol_download, name="symbol-download"),
]
