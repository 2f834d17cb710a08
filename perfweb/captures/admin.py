from django.contrib import admin

from .models import Build, Capture, Membership, Service, SymbolFile, Team


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 1


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    inlines = [MembershipInline]


admin.site.register(Service)
admin.site.register(Build)


@admin.register(Capture)
class CaptureAdmin(admin.ModelAdmin):
    list_display = ("id", "build", "label", "status", "progress", "attempts", "created_at")
    list_filter = ("status",)


admin.site.register(SymbolFile)
