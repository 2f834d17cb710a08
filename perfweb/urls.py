from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

urlpatterns = [
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
    path("api/", include("perfweb.captures.api.urls")),
    path("", include("perfweb.captures.urls")),
]

# too many files or fields in one request: a sentence (JSON for the API), not Django's page
handler400 = "perfweb.captures.upload_limits.bad_request"
