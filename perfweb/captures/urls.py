from django.urls import path

from . import explore_views, views

urlpatterns = [
    path("", views.home, name="home"),
    path("upload/", views.upload, name="upload"),
    path("captures/<int:pk>/", views.capture_detail, name="capture"),
    path("captures/<int:pk>/status.json", views.capture_status, name="capture-status"),
    path("captures/<int:pk>/result.json", views.capture_result, name="capture-result"),
    path("captures/<int:pk>/download/", views.capture_download, name="capture-download"),
    path("captures/<int:pk>/folded/", views.capture_folded, name="capture-folded"),
    path("captures/<int:pk>/retry/", views.capture_retry, name="capture-retry"),
    path("captures/<int:pk>/data/flame.json", explore_views.flame, name="data-flame"),
    path("captures/<int:pk>/data/functions.json", explore_views.functions,
         name="data-functions"),
    path("captures/<int:pk>/data/threads.json", explore_views.threads, name="data-threads"),
    path("captures/<int:pk>/data/timeline.json", explore_views.timeline,
         name="data-timeline"),
    path("builds/<int:pk>/", views.build_detail, name="build"),
    path("builds/<int:pk>/reanalyze/", views.build_reanalyze, name="build-reanalyze"),
    path("symbols/<int:pk>/download/", views.symbol_download, name="symbol-download"),
]
